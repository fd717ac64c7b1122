package linalg

import "fmt"

// Dot returns the inner product of x and y, which must have the same length.
func Dot(x, y []float32) float32 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("linalg.Dot: lengths %d and %d differ", len(x), len(y)))
	}
	return dot(x, y)
}

// DotShift returns Σ x[i]·(y[i] − c), each y[i] − c rounded to float32 before the product (as Dot of x and
// y shifted into memory would be, without writing the shifted y); x and y must have the same length.
func DotShift(x, y []float32, c float32) float32 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("linalg.DotShift: lengths %d and %d differ", len(x), len(y)))
	}
	return dotSh(x, y, c)
}

// Axpy computes y += alpha*x; x and y must have the same length.
func Axpy(alpha float32, x, y []float32) {
	if len(x) != len(y) {
		panic(fmt.Sprintf("linalg.Axpy: lengths %d and %d differ", len(x), len(y)))
	}
	axpy(alpha, x, y)
}

// Scale computes x *= alpha.
func Scale(alpha float32, x []float32) {
	scale(alpha, x)
}

// ScaleMul sets dst[i] = (x[i]·s)·g[i], rounding each product to float32 in that order (an RMSNorm row:
// x times its 1/rms, times the gains), so its values are the scalar loop's bit for bit; dst, x and g must
// have the same length.
func ScaleMul(dst, x, g []float32, s float32) {
	if len(x) != len(dst) || len(g) != len(dst) {
		panic(fmt.Sprintf("linalg.ScaleMul: lengths %d, %d and %d differ", len(dst), len(x), len(g)))
	}
	scMul(dst, x, g, s)
}

// MulShift sets y[i] = a[i]·(y[i] − c), the difference rounded to float32 before the product (a softmax
// row's backward: the weights times their gradient less its dot product with them), as the scalar loop
// rounds it; y and a must have the same length.
func MulShift(y, a []float32, c float32) {
	if len(a) != len(y) {
		panic(fmt.Sprintf("linalg.MulShift: lengths %d and %d differ", len(y), len(a)))
	}
	mulSh(y, a, c)
}

// NormBack adds an RMSNorm row's input gradient to dx: dx[i] += inv·dyg[i] − c·x[i], each product and the
// difference rounded to float32 in that order, as the scalar loop rounds them (dyg the output gradient
// times the gains, inv the row's 1/rms, c = inv³·(dyg·x)/dim); dx, dyg and x must have the same length.
func NormBack(dx, dyg, x []float32, inv, c float32) {
	if len(dyg) != len(dx) || len(x) != len(dx) {
		panic(fmt.Sprintf("linalg.NormBack: lengths %d, %d and %d differ", len(dx), len(dyg), len(x)))
	}
	normBk(dx, dyg, x, inv, c)
}

// RotateHalf applies rotary embeddings in the rotate-half layout to heads consecutive heads of x, each of
// 2·len(sin) values: its halves lo and hi become lo·cos − hi·sin and hi·cos + lo·sin (inverse, the backward
// pass: lo·cos + hi·sin and hi·cos − lo·sin), each product rounded to float32 before the sum, as the scalar
// loop rounds them; cos and sin have the same length, x at least heads·2·len(sin) values.
func RotateHalf(x []float32, heads int, cos, sin []float32, inverse bool) {
	if len(cos) != len(sin) || len(x) < heads*2*len(sin) {
		panic(fmt.Sprintf("linalg.RotateHalf: %d values for %d heads of %d, %d cosines and %d sines", len(x), heads,
			2*len(sin), len(cos), len(sin)))
	}
	rotHalf(x[:heads*2*len(sin)], heads, cos, sin, inverse)
}

// Max returns the largest element of x (NaN if x holds one); x must not be empty.
func Max(x []float32) float32 {
	if len(x) == 0 {
		panic("linalg.Max: empty slice")
	}
	return maxOf(x)
}

// ExpSum sets dst[i] = exp(src[i] − shift) and returns the sum of those values (accumulated in lanes, so the
// order is fixed by the length alone); dst and src must have the same length and may be the same slice.
func ExpSum(dst, src []float32, shift float32) float32 {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("linalg.ExpSum: lengths %d and %d differ", len(dst), len(src)))
	}
	return expSum(dst, src, shift)
}
