package linalg

import (
	"fmt"
	"testing"
)

// BenchmarkPack packs one full panel of the generic paths the AVX2 kernel (6 × 16) and the AVX-512
// kernel (14 × 32) take for a transposed A (dW = dyᵀ·x) and an untransposed B (dy·W): kc = 256 steps.
func BenchmarkPack(b *testing.B) {
	const kc, ld = 256, 1024
	src := make([]float32, kc*ld)
	for _, k := range []struct{ mr, nr int }{{6, 16}, {14, 32}} {
		dst := make([]float32, kc*max(k.mr, k.nr))
		b.Run(fmt.Sprintf("A-transposed/mr=%d", k.mr), func(b *testing.B) {
			b.SetBytes(int64(4 * kc * k.mr))
			for b.Loop() {
				packA(dst, src, ld, true, 64, k.mr, 0, kc, k.mr)
			}
		})
		b.Run(fmt.Sprintf("B/nr=%d", k.nr), func(b *testing.B) {
			b.SetBytes(int64(4 * kc * k.nr))
			for b.Loop() {
				packB(dst, src, ld, false, 0, kc, 64, k.nr, k.nr)
			}
		})
	}
}
