//go:build openblas && cgo

package linalg

import "testing"

// BenchmarkOpenBLASCeiling measures OpenBLAS itself on the 1024³ product, the ceiling the Go kernels are
// compared with; run it together with BenchmarkKernels so both see the same machine load.
func BenchmarkOpenBLASCeiling(b *testing.B) {
	benchGemm(b, trainingShapes[len(trainingShapes)-1:], openblasGemm)
}
