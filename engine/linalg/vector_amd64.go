package linalg

import "golang.org/x/sys/cpu"

//go:noescape
func dotAVX2(x, y *float32, n int) float32

//go:noescape
func axpyAVX2(alpha float32, x, y *float32, n int)

//go:noescape
func scaleAVX2(alpha float32, x *float32, n int)

//go:noescape
func expSumAVX2(dst, src *float32, n int, shift float32) float32

//go:noescape
func sigmoidAVX2(dst, src *float32, n int)

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func expSumAVX512(dst, src *float32, n int, shift float32) float32

//go:noescape
func sigmoidAVX512(dst, src *float32, n int)

// useSIMDVectors switches the vector primitives to their AVX2+FMA versions (AVX-512 for the exp-based ones)
// when the CPU has them. The wrappers only touch the last element the assembly will use, so a too-short slice
// panics in Go instead of being overrun; the exported functions have already matched the lengths.
func useSIMDVectors() {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		return
	}
	dot = func(x, y []float32) float32 {
		if len(x) == 0 {
			return 0
		}
		_ = y[len(x)-1]
		return dotAVX2(&x[0], &y[0], len(x))
	}
	dotSh = func(x, y []float32, c float32) float32 {
		if len(x) == 0 {
			return 0
		}
		_ = y[len(x)-1]
		return dotShiftAVX2(&x[0], &y[0], len(x), c)
	}
	axpy = func(alpha float32, x, y []float32) {
		if len(x) == 0 {
			return
		}
		_ = y[len(x)-1]
		axpyAVX2(alpha, &x[0], &y[0], len(x))
	}
	scale = func(alpha float32, x []float32) {
		if len(x) == 0 {
			return
		}
		scaleAVX2(alpha, &x[0], len(x))
	}
	scMul = func(dst, x, g []float32, s float32) {
		if len(dst) == 0 {
			return
		}
		_, _ = x[len(dst)-1], g[len(dst)-1]
		scaleMulAVX2(&dst[0], &x[0], &g[0], len(dst), s)
	}
	mulSh = func(y, a []float32, c float32) {
		if len(y) == 0 {
			return
		}
		_ = a[len(y)-1]
		mulShiftAVX2(&y[0], &a[0], len(y), c)
	}
	mulPr = func(a, x, y []float32) {
		if len(a) == 0 {
			return
		}
		_, _ = x[len(a)-1], y[len(a)-1]
		mulProdAVX2(&a[0], &x[0], &y[0], len(a))
	}
	swigluGr = func(g, u, da, s []float32) {
		if len(g) == 0 {
			return
		}
		_, _, _ = u[len(g)-1], da[len(g)-1], s[len(g)-1]
		swigluGradAVX2(&g[0], &u[0], &da[0], &s[0], len(g))
	}
	expSum = func(dst, src []float32, shift float32) float32 {
		if len(src) == 0 {
			return 0
		}
		_ = dst[len(src)-1]
		return expSumAVX2(&dst[0], &src[0], len(src), shift)
	}
	sigmoid = func(dst, x []float32) {
		if len(x) == 0 {
			return
		}
		_ = dst[len(x)-1]
		sigmoidAVX2(&dst[0], &x[0], len(x))
	}
	maxOf = func(x []float32) float32 { return maxAVX2(&x[0], len(x)) }
	// The exported functions have checked the lengths and sliced the arguments to them.
	attScores = func(q, k []float32, hd, n int, scale float32, s []float32) {
		if hd%8 != 0 {
			attendScoresGeneric(q, k, hd, n, scale, s)
			return
		}
		attendScoresAVX2(&q[0], &k[0], hd, n, &s[0], scale)
	}
	attWeigh = func(w, v []float32, hd, n int, out []float32, add bool) {
		if hd%64 != 0 {
			attendWeighGeneric(w, v, hd, n, out, add)
			return
		}
		for c := 0; c < hd; c += 64 {
			attendWeigh64AVX2(&w[0], &v[c], hd, n, &out[c], add)
		}
	}
	if hasAVX512() {
		expSum = func(dst, src []float32, shift float32) float32 {
			if len(src) == 0 {
				return 0
			}
			_ = dst[len(src)-1]
			return expSumAVX512(&dst[0], &src[0], len(src), shift)
		}
		sigmoid = func(dst, x []float32) {
			if len(x) == 0 {
				return
			}
			_ = dst[len(x)-1]
			sigmoidAVX512(&dst[0], &x[0], len(x))
		}
	}
}

// Prefetch asks for x's memory to be brought into the cache, without waiting for it: for data a caller
// will read soon in a stream too short for the hardware prefetcher (a decoding sequence's own keys and
// values, a few kilobytes per head).
func Prefetch(x []float32) {
	if len(x) > 0 {
		prefetchL2(&x[0], 4*len(x))
	}
}
