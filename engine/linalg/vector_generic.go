package linalg

// dotGeneric is the portable Dot; four partial sums shorten the floating-point dependency chain.
func dotGeneric(x, y []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		xs, ys := x[i:i+4:i+4], y[i:i+4:i+4]
		s0 += xs[0] * ys[0]
		s1 += xs[1] * ys[1]
		s2 += xs[2] * ys[2]
		s3 += xs[3] * ys[3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpyGeneric is the portable Axpy.
func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// scaleGeneric is the portable Scale.
func scaleGeneric(alpha float32, x []float32) {
	for i := range x {
		x[i] *= alpha
	}
}

// dotShiftGeneric is the portable DotShift, with dotGeneric's four partial sums.
func dotShiftGeneric(x, y []float32, c float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * (y[i] - c)
		s1 += x[i+1] * (y[i+1] - c)
		s2 += x[i+2] * (y[i+2] - c)
		s3 += x[i+3] * (y[i+3] - c)
	}
	for ; i < len(x); i++ {
		s0 += x[i] * (y[i] - c)
	}
	return (s0 + s1) + (s2 + s3)
}

// scaleMulGeneric is the portable ScaleMul.
func scaleMulGeneric(dst, x, g []float32, s float32) {
	x, g = x[:len(dst)], g[:len(dst)]
	for i := range dst {
		dst[i] = x[i] * s * g[i]
	}
}

// normBackGeneric is the portable NormBack.
func normBackGeneric(dx, dyg, x []float32, inv, c float32) {
	dyg, x = dyg[:len(dx)], x[:len(dx)]
	for i, v := range dyg {
		dx[i] += inv*v - c*x[i]
	}
}

// rotateHalfGeneric is the portable RotateHalf.
func rotateHalfGeneric(x []float32, heads int, cs, sn []float32, inverse bool) {
	h := len(sn)
	cs = cs[:h]
	for hd := range heads {
		lo, hi := x[hd*2*h:hd*2*h+h], x[hd*2*h+h:hd*2*h+2*h]
		if inverse {
			for i, s := range sn {
				a, b, c := lo[i], hi[i], cs[i]
				lo[i] = a*c + b*s
				hi[i] = b*c - a*s
			}
			continue
		}
		for i, s := range sn {
			a, b, c := lo[i], hi[i], cs[i]
			lo[i] = a*c - b*s
			hi[i] = b*c + a*s
		}
	}
}

// mulShiftGeneric is the portable MulShift.
func mulShiftGeneric(y, a []float32, c float32) {
	a = a[:len(y)]
	for i, v := range a {
		y[i] = v * (y[i] - c)
	}
}
