package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

func relErr(got float32, want float64) float64 {
	return math.Abs(float64(got)-want) / max(math.Abs(want), 1e-30)
}

// TestExpAccuracy sweeps the exp shared by Softmax and Sigmoid against math.Exp over its whole range.
func TestExpAccuracy(t *testing.T) {
	t.Parallel()
	for x := float32(-87); x < 88; x += 0.0137 {
		src := []float32{x}
		for name, got := range map[string]float32{
			"generic": expGeneric(x),
			"simd":    func() float32 { d := []float32{0}; expSum(d, src, 0); return d[0] }(),
		} {
			if e := relErr(got, math.Exp(float64(x))); e > 5e-7 {
				t.Fatalf("%s exp(%v) = %v, relative error %.3g", name, x, got, e)
			}
		}
	}
}

func TestSoftmax(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 18))
	for _, n := range vectorLengths() {
		x := randSlice(rng, n)
		for i := range x {
			x[i] *= 30
		}
		mx := math.Inf(-1)
		for _, v := range x {
			mx = max(mx, float64(v))
		}
		var sum float64
		for _, v := range x {
			sum += math.Exp(float64(v) - mx)
		}
		got := append([]float32(nil), x...)
		Softmax(got)
		gen := append([]float32(nil), x...)
		if n > 0 {
			scaleGeneric(1/expSumGeneric(gen, gen, maxGeneric(gen)), gen)
		}
		for i, v := range x {
			want := math.Exp(float64(v)-mx) / sum
			if math.Abs(float64(got[i])-want) > 1e-6+2e-6*want || math.Abs(float64(gen[i])-want) > 1e-6+2e-6*want {
				t.Fatalf("n=%d: softmax[%d] = %v (generic %v), want %v", n, i, got[i], gen[i], want)
			}
		}
	}
}

func TestSoftmaxNaN(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 7, 8, 9, 40} {
		for at := 0; at < n; at += 3 {
			x := make([]float32, n)
			x[at] = float32(math.NaN())
			Softmax(x)
			for i, v := range x {
				if v == v {
					t.Fatalf("n=%d NaN at %d: softmax[%d] = %v, want NaN", n, at, i, v)
				}
			}
		}
	}
}

func TestMax(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 20))
	for _, n := range vectorLengths()[1:] {
		x := randSlice(rng, n)
		want := x[0]
		for _, v := range x {
			want = max(want, v)
		}
		if got, g := maxOf(x), maxGeneric(x); got != want || g != want {
			t.Fatalf("n=%d: max = %v (generic %v), want %v", n, got, g, want)
		}
	}
}

func TestSigmoid(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range vectorLengths() {
		x := randSlice(rng, n+1)
		for i := range x {
			x[i] *= 20
		}
		got := make([]float32, n+1)
		got[n] = 42
		Sigmoid(got[:n], x[:n])
		gen := make([]float32, n)
		sigmoidGeneric(gen, x[:n])
		for i := 0; i < n; i++ {
			want := 1 / (1 + math.Exp(-float64(x[i])))
			if math.Abs(float64(got[i])-want) > 1e-6 || math.Abs(float64(gen[i])-want) > 1e-6 {
				t.Fatalf("n=%d: sigmoid(%v) = %v (generic %v), want %v", n, x[i], got[i], gen[i], want)
			}
		}
		if got[n] != 42 {
			t.Fatalf("n=%d: Sigmoid wrote past its slice", n)
		}
	}
	if v := Sigmoid1(float32(math.NaN())); v == v {
		t.Fatalf("sigmoid(NaN) = %v", v)
	}
	for _, x := range []float32{-1000, 1000} {
		if v := Sigmoid1(x); v < 0 || v > 1 {
			t.Fatalf("sigmoid(%v) = %v", x, v)
		}
	}
}

// Sigmoid1 applies Sigmoid to one value.
func Sigmoid1(x float32) float32 {
	d := []float32{0}
	Sigmoid(d, []float32{x})
	return d[0]
}
