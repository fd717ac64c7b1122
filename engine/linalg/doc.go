// Package linalg holds the float32 dense linear-algebra kernels of the training engine: a row-major Sgemm
// (C = alpha*op(A)*op(B) + beta*C) and the vector primitives of the model's hot loops.
//
// Every matmul of forward, backward and sampling passes through Sgemm, so it is written for speed: packed
// panels, cache blocking and an AVX-512 (or AVX2+FMA) microkernel in Go assembly on amd64, a blocked generic
// Go kernel elsewhere, and goroutine parallelism for large products. Matrix-vector products (one token at a
// time) and products of a few rows (a few completions at a time) skip packing and stream the matrix through
// kernels of their own. Building with `-tags openblas` routes Sgemm to OpenBLAS through cgo instead. Backend
// reports which implementation is in use; README.md has the design and measurements.
//
// Shape or length mismatches are programming errors and panic with a descriptive message, as slice indexing
// does; no function here returns an error.
package linalg
