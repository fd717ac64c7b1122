package linalg

import (
	"fmt"
	"math"
)

// Softmax replaces x with its softmax, exp(x[i]-max(x)) / Σ_j exp(x[j]-max(x)). A NaN anywhere in x makes the
// whole result NaN, so a diverging model is noticed rather than hidden.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := maxOf(x)
	sum := expSum(x, x, mx)
	scale(1/sum, x)
}

// Sigmoid sets dst[i] = 1/(1+exp(-x[i])), the gate of SiLU (silu(x) = x·Sigmoid(x)); dst and x must have the
// same length and may be the same slice.
func Sigmoid(dst, x []float32) {
	if len(dst) != len(x) {
		panic(fmt.Sprintf("linalg.Sigmoid: lengths %d and %d differ", len(dst), len(x)))
	}
	sigmoid(dst, x)
}

// MulProd sets a[i] = a[i]·(x[i]·y[i]), the inner product rounded first (a gated MLP's act(g)·(g·u), with
// act(g) already in a), as the scalar loop rounds it; a, x and y must have the same length.
func MulProd(a, x, y []float32) {
	if len(x) != len(a) || len(y) != len(a) {
		panic(fmt.Sprintf("linalg.MulProd: lengths %d, %d and %d differ", len(a), len(x), len(y)))
	}
	mulPr(a, x, y)
}

// SwiGLUGrad is SwiGLU's backward over a row, in place: given da and s = σ(g), it sets u to da·g·s and g to
// da·u·s·(1 + g·(1 − s)) (from the values before), each operation rounded in that order; all four must
// have the same length.
func SwiGLUGrad(g, u, da, s []float32) {
	if len(u) != len(g) || len(da) != len(g) || len(s) != len(g) {
		panic(fmt.Sprintf("linalg.SwiGLUGrad: lengths %d, %d, %d and %d differ", len(g), len(u), len(da), len(s)))
	}
	swigluGr(g, u, da, s)
}

func mulProdGeneric(a, x, y []float32) {
	x, y = x[:len(a)], y[:len(a)]
	for i := range a {
		a[i] *= x[i] * y[i]
	}
}

func swigluGradGeneric(g, u, da, s []float32) {
	u, da, s = u[:len(g)], da[:len(g)], s[:len(g)]
	for i, gv := range g {
		sv, uv := s[i], u[i]
		u[i] = da[i] * gv * sv
		g[i] = da[i] * uv * sv * (1 + gv*(1-sv))
	}
}

// The exp below is shared by the generic paths and mirrors the assembly: x clamped to [expLo, expHi], split as
// n·ln2 + r with |r| ≤ ln2/2, e^r by a polynomial (Cephes coefficients), 2^n put into the exponent bits.
const (
	expHi = 88.3762626647949
	expLo = -87.3365478515625
	ln2Hi = 0.693359375
	ln2Lo = -2.12194440e-4
	log2e = 1.44269504088896341
)

func expGeneric(x float32) float32 {
	if x != x {
		return x
	}
	x = min(max(x, expLo), expHi)
	n := float32(math.RoundToEven(float64(x * log2e)))
	r := x - n*ln2Hi - n*ln2Lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// expSumGeneric sets dst[i] = e^(src[i]-shift) and returns the sum.
func expSumGeneric(dst, src []float32, shift float32) float32 {
	dst = dst[:len(src)]
	var s float32
	for i, v := range src {
		e := expGeneric(v - shift)
		dst[i] = e
		s += e
	}
	return s
}

func sigmoidGeneric(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = 1 / (1 + expGeneric(-v))
	}
}

// maxGeneric returns the largest element of a non-empty x, or NaN if x holds one.
func maxGeneric(x []float32) float32 {
	m := x[0]
	for _, v := range x {
		if v != v {
			return v
		}
		m = max(m, v)
	}
	return m
}
