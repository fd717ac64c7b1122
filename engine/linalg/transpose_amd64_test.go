package linalg

import (
	"math/rand"
	"testing"
)

// TestTransposeInto: B's rows as columns for widths around transposeInto's blocks of 8 columns, strided
// source and destination rows, nothing past a destination row's values written.
func TestTransposeInto(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, k := range []int{1, 3, 8, 9, 16, 19} {
		for _, rows := range []int{0, 1, 7, 33} {
			ldb, ldd := k+2, rows+3
			b := randVec(rng, max(rows*ldb, 1))
			dst := make([]float32, k*ldd)
			for i := range dst {
				dst[i] = -1
			}
			transposeInto(dst, ldd, b, ldb, rows, k)
			for p := range k {
				for j := range ldd {
					want := float32(-1)
					if j < rows {
						want = b[j*ldb+p]
					}
					if got := dst[p*ldd+j]; got != want {
						t.Fatalf("k %d, %d rows: dst[%d][%d] = %g, want %g", k, rows, p, j, got, want)
					}
				}
			}
		}
	}
}
