package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

// vectorLengths covers the empty vector, every tail length of the 8- and 32-wide loops and a long vector.
func vectorLengths() []int {
	var ls []int
	for n := 0; n <= 70; n++ {
		ls = append(ls, n)
	}
	return append(ls, 1000, 4099)
}

func TestDot(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range vectorLengths() {
		x, y := randSlice(rng, n), randSlice(rng, n)
		var want float64
		for i := range x {
			want += float64(x[i]) * float64(y[i])
		}
		tol := 1e-6 * float64(n+1)
		for name, f := range map[string]func(x, y []float32) float32{"Dot": Dot, "generic": dotGeneric} {
			if got := f(x, y); math.Abs(float64(got)-want) > tol {
				t.Fatalf("%s n=%d: got %v, want %v", name, n, got, want)
			}
		}
	}
}

// TestDotShift checks DotShift against a float64 sum of the same float32 shifted values, on every tail
// length; with a large shift (30) the shifted values are what must be rounded first.
func TestDotShift(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 32))
	for _, n := range vectorLengths() {
		x, y := randSlice(rng, n), randSlice(rng, n)
		for _, c := range []float32{0, 0.3, 30} {
			var want float64
			for i := range x {
				want += float64(x[i]) * float64(y[i]-c)
			}
			tol := 1e-6 * float64(n+1) * float64(1+c)
			for name, f := range map[string]func(x, y []float32, c float32) float32{"DotShift": DotShift, "generic": dotShiftGeneric} {
				if got := f(x, y, c); math.Abs(float64(got)-want) > tol {
					t.Fatalf("%s n=%d c=%v: got %v, want %v", name, n, c, got, want)
				}
			}
		}
	}
}

// TestElementwiseRows: ScaleMul, MulShift, NormBack, MulProd and SwiGLUGrad, exported (AVX2 where the CPU
// has it) and portable, give the scalar loops' values bit for bit at every length around the vector widths,
// and write nothing past their rows.
func TestElementwiseRows(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 42))
	same := func(name string, n int, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s n=%d: [%d] = %v, want %v", name, n, i, got[i], want[i])
			}
		}
		if got[n] != 7 {
			t.Fatalf("%s n=%d wrote past its row", name, n)
		}
	}
	padded := func(x []float32) []float32 { return append(append([]float32(nil), x...), 7) }
	for _, n := range vectorLengths() {
		a, x, y, s := randSlice(rng, n), randSlice(rng, n), randSlice(rng, n), randSlice(rng, n)
		c := float32(rng.Float64()*3 - 1.5)
		wantScaled, wantShifted, wantProd := make([]float32, n), make([]float32, n), make([]float32, n)
		wantG, wantU, wantNorm := make([]float32, n), make([]float32, n), make([]float32, n)
		inv := float32(rng.Float64() + 0.5)
		for i := range n {
			wantNorm[i] = s[i] + (inv*y[i] - c*x[i])
			wantScaled[i] = x[i] * c * y[i]
			wantShifted[i] = a[i] * (y[i] - c)
			wantProd[i] = a[i] * (x[i] * y[i])
			wantU[i] = y[i] * x[i] * s[i]
			wantG[i] = y[i] * a[i] * s[i] * (1 + x[i]*(1-s[i]))
		}
		for name, f := range map[string]func(dst, x, g []float32, s float32){"ScaleMul": ScaleMul, "scaleMulGeneric": scaleMulGeneric} {
			got := padded(make([]float32, n))
			f(got[:n], x, y, c)
			same(name, n, got, wantScaled)
		}
		for name, f := range map[string]func(y, a []float32, c float32){"MulShift": MulShift, "mulShiftGeneric": mulShiftGeneric} {
			got := padded(y)
			f(got[:n], a, c)
			same(name, n, got, wantShifted)
		}
		for name, f := range map[string]func(dx, dyg, x []float32, inv, c float32){"NormBack": NormBack, "normBackGeneric": normBackGeneric} {
			got := padded(s)
			f(got[:n], y, x, inv, c)
			same(name, n, got, wantNorm)
		}
		for name, f := range map[string]func(a, x, y []float32){"MulProd": MulProd, "mulProdGeneric": mulProdGeneric} {
			got := padded(a)
			f(got[:n], x, y)
			same(name, n, got, wantProd)
		}
		for name, f := range map[string]func(g, u, da, s []float32){"SwiGLUGrad": SwiGLUGrad, "swigluGradGeneric": swigluGradGeneric} {
			g, u := padded(x), padded(a) // gate x, up a, da y
			f(g[:n], u[:n], y, s)
			same(name+" u", n, u, wantU)
			same(name+" g", n, g, wantG)
		}
	}
}

func TestAxpyScale(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range vectorLengths() {
		x, y := randSlice(rng, n+1), randSlice(rng, n+1)
		const alpha = float32(-0.75)
		for _, impl := range []struct {
			name  string
			axpy  func(float32, []float32, []float32)
			scale func(float32, []float32)
		}{{"exported", Axpy, Scale}, {"generic", axpyGeneric, scaleGeneric}} {
			got := append([]float32(nil), y...)
			impl.axpy(alpha, x[:n], got[:n])
			scaled := append([]float32(nil), y...)
			impl.scale(alpha, scaled[:n])
			for i := 0; i < n; i++ {
				if want := float64(y[i]) + float64(alpha)*float64(x[i]); math.Abs(float64(got[i])-want) > 1e-6 {
					t.Fatalf("%s Axpy n=%d: y[%d] = %v, want %v", impl.name, n, i, got[i], want)
				}
				if want := alpha * y[i]; scaled[i] != want {
					t.Fatalf("%s Scale n=%d: x[%d] = %v, want %v", impl.name, n, i, scaled[i], want)
				}
			}
			if got[n] != y[n] || scaled[n] != y[n] {
				t.Fatalf("%s n=%d: element past the slice was written", impl.name, n)
			}
		}
	}
}

func TestVectorLengthMismatchPanics(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(){
		"Dot":      func() { Dot(make([]float32, 3), make([]float32, 4)) },
		"Axpy":     func() { Axpy(1, make([]float32, 3), make([]float32, 2)) },
		"ScaleMul": func() { ScaleMul(make([]float32, 3), make([]float32, 3), make([]float32, 2), 1) },
		"MulShift": func() { MulShift(make([]float32, 3), make([]float32, 2), 1) },
		"MulProd":  func() { MulProd(make([]float32, 3), make([]float32, 2), make([]float32, 3)) },
		"SwiGLUGrad": func() {
			SwiGLUGrad(make([]float32, 3), make([]float32, 3), make([]float32, 3), make([]float32, 2))
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with mismatched lengths did not panic", name)
				}
			}()
			f()
		}()
	}
}

// TestRotateHalf: RotateHalf (AVX2 where the CPU has it, for halves a multiple of 8) gives the scalar
// loop's values bit for bit, both ways, and writes nothing past its heads.
func TestRotateHalf(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(43, 44))
	for _, half := range []int{4, 8, 12, 32, 64, 128} {
		for _, heads := range []int{1, 3, 9} {
			for _, inverse := range []bool{false, true} {
				x := randSlice(rng, heads*2*half+1)
				cs, sn := randSlice(rng, half), randSlice(rng, half)
				want := append([]float32(nil), x...)
				for hd := range heads {
					lo, hi := want[hd*2*half:], want[hd*2*half+half:]
					for i := range half {
						a, b := lo[i], hi[i]
						if inverse {
							lo[i], hi[i] = a*cs[i]+b*sn[i], b*cs[i]-a*sn[i]
						} else {
							lo[i], hi[i] = a*cs[i]-b*sn[i], b*cs[i]+a*sn[i]
						}
					}
				}
				got := append([]float32(nil), x...)
				RotateHalf(got, heads, cs, sn, inverse)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("half %d, %d heads, inverse %v: [%d] = %v, want %v", half, heads, inverse, i, got[i], want[i])
					}
				}
			}
		}
	}
}
