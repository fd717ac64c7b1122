package linalg

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestExpVariants checks the AVX2 and AVX-512 expSum and sigmoid, which the dispatch picks between by CPU,
// against the generic versions on every tail length.
func TestExpVariants(t *testing.T) {
	t.Parallel()
	type variant struct {
		name    string
		ok      bool
		expSum  func(dst, src *float32, n int, shift float32) float32
		sigmoid func(dst, src *float32, n int)
	}
	variants := []variant{
		{"avx2", cpu.X86.HasAVX2 && cpu.X86.HasFMA, expSumAVX2, sigmoidAVX2},
		{"avx512", hasAVX512(), expSumAVX512, sigmoidAVX512},
	}
	rng := rand.New(rand.NewPCG(33, 34))
	for n := 1; n <= 70; n++ {
		x := randSlice(rng, n)
		for i := range x {
			x[i] *= 40
		}
		wantE := make([]float32, n)
		wantSum := expSumGeneric(wantE, x, 3)
		wantS := make([]float32, n)
		sigmoidGeneric(wantS, x)
		for _, v := range variants {
			if !v.ok {
				continue
			}
			gotE, gotS := make([]float32, n+1), make([]float32, n+1)
			gotE[n], gotS[n] = 7, 7
			sum := v.expSum(&gotE[0], &x[0], n, 3)
			v.sigmoid(&gotS[0], &x[0], n)
			if relErr(sum, float64(wantSum)) > 1e-5 {
				t.Fatalf("%s n=%d: expSum = %v, want %v", v.name, n, sum, wantSum)
			}
			for i := 0; i < n; i++ {
				if relErr(gotE[i], float64(wantE[i])) > 1e-6 || math.Abs(float64(gotS[i]-wantS[i])) > 1e-6 {
					t.Fatalf("%s n=%d [%d]: exp %v sigmoid %v, want %v %v", v.name, n, i, gotE[i], gotS[i], wantE[i], wantS[i])
				}
			}
			if gotE[n] != 7 || gotS[n] != 7 {
				t.Fatalf("%s n=%d: wrote past the end", v.name, n)
			}
		}
	}
}
