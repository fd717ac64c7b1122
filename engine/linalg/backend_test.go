//go:build !openblas

package linalg

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestBackend checks that the default build names the best kernel this CPU runs.
func TestBackend(t *testing.T) {
	want := "generic"
	if ks := simdKernels(); len(ks) > 0 {
		want = ks[0].name
	}
	if got := Backend(); got != want {
		t.Fatalf("Backend() = %q, want %q", got, want)
	}
}

// TestAVX2UnderGODEBUG: make test runs the engine's tests a second time with GODEBUG=cpu.avx512f=off so that
// the AVX2 kernels (machines without AVX-512) are tested on the AVX-512 machines CI runs on. That holds
// only while every dispatch reads golang.org/x/sys/cpu, which honours GODEBUG: under it, the AVX2 kernel
// must be the one chosen, and neither AMX tiles nor bfloat16 dot products.
func TestAVX2UnderGODEBUG(t *testing.T) {
	if !strings.Contains(os.Getenv("GODEBUG"), "cpu.avx512f=off") {
		t.Skip("GODEBUG does not turn AVX-512 off")
	}
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("no AVX2+FMA")
	}
	if got := Backend(); got != "avx2" {
		t.Errorf("Backend() = %q under GODEBUG=%s, want avx2", got, os.Getenv("GODEBUG"))
	}
	if Pairs() || BF16Dot() {
		t.Errorf("pair products %v (%s), bfloat16 dot products %v under GODEBUG=%s", Pairs(), PairsKernel(), BF16Dot(), os.Getenv("GODEBUG"))
	}
}
