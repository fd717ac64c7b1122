//go:build openblas && cgo

package linalg

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkOpenBLASCeiling measures OpenBLAS itself on the 1024³ product, the ceiling the Go kernels are
// compared with; run it together with BenchmarkKernels so both see the same machine load.
// OpenBLAS runs with its own threads on all cores here, as it would on its own; the hybrid Sgemm keeps it to
// one thread per call.
func BenchmarkOpenBLASCeiling(b *testing.B) {
	setOpenblasThreads(runtime.GOMAXPROCS(0))
	defer setOpenblasThreads(1)
	benchGemm(b, trainingShapes[len(trainingShapes)-1:], openblasGemm)
}

// TestOpenBLASRoutes checks that openblas builds report the backend and that products on both sides of
// openblasMinMACs (OpenBLAS and the Go kernels) are correct.
func TestOpenBLASRoutes(t *testing.T) {
	if Backend() != "openblas" {
		t.Fatalf("Backend() = %q in an openblas build", Backend())
	}
	rng := rand.New(rand.NewPCG(27, 28))
	for _, d := range [][3]int{{520, 520, 500}, {64, 70, 50}} {
		g := newGemmCase(rng, false, true, d[0], d[1], d[2], 1, 0.5, 1)
		g.check(t, "openblas Sgemm", Sgemm)
	}
}
