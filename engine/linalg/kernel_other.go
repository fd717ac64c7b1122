//go:build !amd64

package linalg

// simdKernels lists the assembly kernels this CPU can run: none outside amd64.
func simdKernels() []*microKernel { return nil }

// simdNarrowKernel returns the kernel for n ≤ 16: none outside amd64.
func simdNarrowKernel() *microKernel { return nil }

// useSIMDVectors keeps the generic vector primitives outside amd64.
func useSIMDVectors() {}

// useSmallRows keeps the row-by-row gemv for few-row products outside amd64.
func useSmallRows() {}

// Prefetch is a hint with no portable form: nothing outside amd64.
func Prefetch(x []float32) {}
