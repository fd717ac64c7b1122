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

// roundedRows is RoundedRows outside amd64: there are no pair products.
func roundedRows(k int) bool { return false }

// gatherTPanelBF16AVX2 is never called outside amd64 (sgemmBlockedBF16N runs where the AVX2 tiles exist).
func gatherTPanelBF16AVX2(dst, src *uint16, pairs, stride int) {
	panic("linalg: no AVX2 outside amd64")
}

// gatherTPanel32BF16AVX2 is never called outside amd64 (sgemmPackedBF16NRows runs where the AVX-512 panel
// tiles exist).
func gatherTPanel32BF16AVX2(dst, src *uint16, pairs, stride int) {
	panic("linalg: no AVX2 outside amd64")
}

// peakLoops: no instruction loops outside amd64 (internal/roofline then measures the engine's own products).
func peakLoops() (fma, dot peakLoop) { return peakLoop{}, peakLoop{} }
