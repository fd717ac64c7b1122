package model

import "math"

// expf is a float32 exp accurate to about 2 ulp, several times faster than math.Exp: x = n·ln2 + r with
// |r| ≤ ln2/2, e^r by a degree-6 polynomial, and 2^n put into the exponent bits. Softmax and SiLU spend
// most of their time here.
func expf(x float32) float32 {
	switch {
	case x > 88.7:
		return float32(math.Inf(1))
	case x < -87.3:
		return 0
	case x != x:
		return x
	}
	const ln2Hi, ln2Lo, log2e = 0.693359375, -2.12194440e-4, 1.44269504088896341
	n := float32(math.Floor(float64(x*log2e + 0.5)))
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
