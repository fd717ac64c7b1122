package linalg

import "testing"

// TestPanelsBeatDot: the choice is made once and kept, and never made for the panels where there are no
// bfloat16 dot products to choose against.
func TestPanelsBeatDot(t *testing.T) {
	defer SetBF16Dot(BF16Dot())
	SetBF16Dot(false)
	if PanelsBeatDot() {
		t.Fatal("PanelsBeatDot with bfloat16 dot products off")
	}
	if !SetBF16Dot(true) {
		t.Skip("no bfloat16 dot products on this CPU")
	}
	first := PanelsBeatDot()
	for range 3 {
		if PanelsBeatDot() != first {
			t.Fatal("PanelsBeatDot changed its answer")
		}
	}
	t.Logf("panel tiles beat bfloat16 dot products here: %v", first)
}

// BenchmarkPanelsOverDot reports the ratio PanelsBeatDot decides on (below 0.85: the panel tiles).
//
//	go test -run '^$' -bench PanelsOverDot -count 10 ./engine/linalg/
func BenchmarkPanelsOverDot(b *testing.B) {
	defer SetBF16Dot(BF16Dot())
	SetBF16Dot(true)
	if !BF16Dot() || panelTilesFor(kernelFor(1536).nr) == nil {
		b.Skip("no bfloat16 dot products or no panel tiles on this CPU")
	}
	const m, n, k = 32, 1536, 576
	a, c := make([]float32, m*k), make([]float32, m*n)
	w := make([]uint16, n*k)
	for i := range w {
		w[i] = ToBF16(float32(i%5-2) / 8)
	}
	p := PackBF16(n, k, w, k)
	var r float64
	for b.Loop() {
		r = panelsOverDot(m, n, k, a, w, p, c)
	}
	b.ReportMetric(r, "panels/dot")
}
