package linalg

import (
	"slices"
	"sync"
	"time"
)

// PanelsBeatDot reports whether, on this CPU, a decoding batch multiplies a packed bfloat16 matrix faster
// with the float32 panel tiles (SgemmPackedBF16) than with bfloat16 dot products (SgemmBF16Infer), so that a
// batch of many rows should take the panels even where BF16Dot is on. Which wins depends on the core: on
// AMD's Zen 4 a bfloat16 dot product does twice the work of a float32 FMA at the same rate (a kernel peak of
// 373 against 201 GFLOP/s on 2 cores), on an Intel Xeon with avx512_bf16 it issues at half the FMAs' rate,
// and the panel tiles, which waste no multiply on rounding, run a 32-row decoding step in 81 ms against 106.
// It is measured once per process, on a 32 × 1536 × 576 product (about 20 ms, when a batch of 24 rows or
// more first decodes, not when a base loads, whose memory the training estimate accounts for), and the
// panels must be 15% faster to win, so that a machine where the two are close keeps the dot products
// whatever the noise.
func PanelsBeatDot() bool {
	if !BF16Dot() || panelTilesFor(kernelFor(1536).nr) == nil {
		return false
	}
	return panelsBeatDot()
}

var panelsBeatDot = sync.OnceValue(func() bool {
	const m, n, k = 32, 1536, 576
	a, c := make([]float32, m*k), make([]float32, m*n)
	w := make([]uint16, n*k)
	for i := range a {
		a[i] = float32(i%7-3) / 4
	}
	for i := range w {
		w[i] = ToBF16(float32(i%5-2) / 8)
	}
	p := PackBF16(n, k, w, k)
	return panelsOverDot(m, n, k, a, w, p, c) < 0.85
})

// panelsOverDot is the time of the panel tiles over that of the dot products on one product: the median
// of 15 ratios, each of two runs taken back to back, so that both see the same load.
func panelsOverDot(m, n, k int, a []float32, w []uint16, p *PackedBF16, c []float32) float64 {
	timed := func(run func()) time.Duration {
		start := time.Now()
		run()
		return time.Since(start)
	}
	panels := func() { SgemmPackedBF16(m, 1, a, k, p, 0, c, n) }
	dot := func() { SgemmBF16Infer(false, true, m, n, k, 1, a, k, w, k, 0, c, n) }
	panels() // warm-up: caches, and the first wide instructions of a core
	dot()
	rs := make([]float64, 15)
	for i := range rs {
		rs[i] = float64(timed(panels)) / float64(timed(dot))
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}
