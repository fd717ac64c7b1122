//go:build openblas && cgo

package linalg

import "github.com/trainyard/trainyard/engine/linalg/internal/openblas"

// openblasGemm is non-nil in openblas builds; init makes it the Sgemm implementation. The vector primitives
// stay in Go, where a cgo call would cost more than the short vectors of the model's hot loops take.
var openblasGemm = openblas.Sgemm

// setOpenblasThreads sets OpenBLAS's own thread count (nil outside openblas builds).
var setOpenblasThreads = openblas.SetThreads
