package linalg

import "golang.org/x/sys/cpu"

//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func dotBF16AVX2(x *float32, y *uint16, n int) float32

// The bfloat16 kernels need AVX2 (VPMOVZXWD on ymm) and FMA; the callers have matched the lengths.
func init() {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		return
	}
	widenBF16 = func(dst []float32, src []uint16) {
		if len(src) == 0 {
			return
		}
		_ = dst[len(src)-1]
		widenBF16AVX2(&dst[0], &src[0], len(src))
	}
	dotBF16 = func(x []float32, y []uint16) float32 {
		if len(x) == 0 {
			return 0
		}
		_ = y[len(x)-1]
		return dotBF16AVX2(&x[0], &y[0], len(x))
	}
}
