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
	normBk = func(dx, dyg, x []float32, inv, c float32) {
		if len(dx) == 0 {
			return
		}
		_, _ = dyg[len(dx)-1], x[len(dx)-1]
		normBackAVX2(&dx[0], &dyg[0], &x[0], len(dx), inv, c)
	}
	rotHalf = func(x []float32, heads int, cs, sn []float32, inverse bool) {
		h := len(sn)
		if h%8 != 0 || heads == 0 || h == 0 {
			rotateHalfGeneric(x, heads, cs, sn, inverse)
			return
		}
		_, _ = x[heads*2*h-1], cs[h-1]
		if inverse {
			rotateHalfInvAVX2(&x[0], &cs[0], &sn[0], heads, h)
		} else {
			rotateHalfAVX2(&x[0], &cs[0], &sn[0], heads, h)
		}
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
	// A decoding step's attention, a query row at a time over the cached keys and values. The products
	// these replace went to Sgemm's naive loop or its blocked driver's packing on AVX2, and on AVX-512 to
	// Sgemm's few-row kernels, which take 4 rows (3 of them used at SmolLM2's shape) through a call chain
	// per product: 2.4× these kernels' time for 3 rows' scores over 64 keys in L1 and 1.3× for their
	// weighing on a Zen 4 EPYC (BenchmarkAttend), rollouts 4–6% slower.
	attScores = func(q []float32, ldq, rows int, k []float32, hd, n int, scale float32, s []float32, lds int) {
		if hd%8 != 0 {
			attendScoresSgemm(q, ldq, rows, k, hd, n, scale, s, lds)
			return
		}
		for i := range rows {
			attendScoresAVX2(&q[i*ldq], &k[0], hd, n, &s[i*lds], scale)
		}
	}
	attWeigh = func(w []float32, ldw, rows int, v []float32, hd, n int, out []float32, ldo int, add bool) {
		if hd%64 != 0 || n == 0 {
			attendWeighSgemm(w, ldw, rows, v, hd, n, out, ldo, add)
			return
		}
		for i := range rows {
			for c := 0; c < hd; c += 64 {
				attendWeigh64AVX2(&w[i*ldw], &v[c], hd, n, &out[i*ldo+c], add)
			}
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
