package prefault

import "testing"

// TestSliceKeepsContents: populating maps pages in without changing what they hold, whether they were
// written before or not, and at any alignment and length (including none).
func TestSliceKeepsContents(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 1 << 20, 3<<20 + 7} {
		b := make([]float32, n)
		for i := 0; i < n; i += 997 {
			b[i] = float32(i)
		}
		Slice(b)
		if n > 3 {
			Slice(b[3:])
		}
		for i := range b {
			want := float32(0)
			if i%997 == 0 {
				want = float32(i)
			}
			if b[i] != want {
				t.Fatalf("n=%d: b[%d] = %v after populating, want %v", n, i, b[i], want)
			}
		}
	}
	w := make([]uint16, 5<<20)
	Slice(w)
	for i := range w {
		if w[i] != 0 {
			t.Fatalf("w[%d] = %d after populating fresh memory", i, w[i])
		}
	}
}
