package model

import (
	"math"

	"github.com/trainyard/trainyard/engine/linalg"
)

// The row-wise operations below run their rows in parallel through linalg.ParallelRows (on the caller's
// goroutine for the few rows of a decoding step). Every row is computed by the same code whatever chunk it
// lands in and nothing is summed across rows in parallel, so results do not depend on the number of workers.

// ropeTable caches cos/sin of position·invFreq(i) for every position and frequency.
type ropeTable struct {
	half     int
	cos, sin []float32 // [maxSeqLen × half]
}

func newRopeTable(c Config) *ropeTable {
	half := c.HeadDim / 2
	t := &ropeTable{half: half, cos: make([]float32, c.MaxSeqLen*half), sin: make([]float32, c.MaxSeqLen*half)}
	inv := ropeInvFreq(c)
	for p := 0; p < c.MaxSeqLen; p++ {
		for i, f := range inv {
			ang := float64(p) * f
			t.cos[p*half+i] = float32(math.Cos(ang))
			t.sin[p*half+i] = float32(math.Sin(ang))
		}
	}
	return t
}

// ropeInvFreq returns the rotation frequencies θ^(-2i/headDim), adjusted for Llama 3's rope_scaling: long
// wavelengths (low frequencies, beyond the original context over LowFreqFactor) are divided by Factor, short
// ones (within the original context over HighFreqFactor) kept, and the band between blended linearly in
// origMax/wavelength, as Hugging Face's _compute_llama3_parameters does.
func ropeInvFreq(c Config) []float64 {
	inv := make([]float64, c.HeadDim/2)
	for i := range inv {
		inv[i] = math.Pow(c.RopeTheta, -2*float64(i)/float64(c.HeadDim))
	}
	if c.RopeLinear > 0 {
		for i := range inv {
			inv[i] /= c.RopeLinear
		}
	}
	s := c.Rope3
	if s.Factor == 0 {
		return inv
	}
	orig := float64(s.OrigMaxPos)
	lowWave, highWave := orig/s.LowFreqFactor, orig/s.HighFreqFactor
	for i, f := range inv {
		wave := 2 * math.Pi / f
		switch {
		case wave < highWave:
		case wave > lowWave:
			inv[i] = f / s.Factor
		default:
			smooth := (orig/wave - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			inv[i] = (1-smooth)*f/s.Factor + smooth*f
		}
	}
	return inv
}

// applyRows rotates the q rows ([len(pos) × qHeads·headDim]) and k rows ([len(pos) × kHeads·headDim]) of
// every position in pos; inverse applies the transpose (the backward pass of the rotation).
func (t *ropeTable) applyRows(q, k []float32, qHeads, kHeads int, pos []int, inverse bool) {
	qd, kd := qHeads*2*t.half, kHeads*2*t.half
	linalg.ParallelRows(len(pos), len(pos)*(qd+kd)*3, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			t.apply(q[r*qd:(r+1)*qd], qHeads, pos[r], inverse)
			t.apply(k[r*kd:(r+1)*kd], kHeads, pos[r], inverse)
		}
	})
}

// apply rotates every head of row (heads × headDim) at position pos, rotate-half layout:
// x'[i] = x[i]·cos − x[i+h]·sin, x'[i+h] = x[i+h]·cos + x[i]·sin. inverse applies the transpose.
func (t *ropeTable) apply(row []float32, heads, pos int, inverse bool) {
	h := t.half
	linalg.RotateHalf(row, heads, t.cos[pos*h:pos*h+h], t.sin[pos*h:pos*h+h], inverse)
}

// rmsNorm writes y = x·r·g per row with r = 1/sqrt(mean(x²)+eps) and records r per row. When cp is not nil
// it also receives a copy of x (the residual stream the next sublayer adds into), while the row is in cache.
func rmsNorm(y, x, g, r, cp []float32, dim int, eps float32) {
	rmsNormTo(y, x, g, r, cp, dim, eps, 0, false)
}

// rmsNormTo is rmsNorm with the gains taken as off + g (Gemma's 1 + g), and with add the normed rows added
// to y instead of written (a sublayer's output normed into the residual stream).
func rmsNormTo(y, x, g, r, cp []float32, dim int, eps, off float32, add bool) {
	rmsNormRounding(y, nil, x, g, r, cp, dim, eps, off, add)
}

// rmsNormRounding is rmsNormTo that also rounds each row of y to bfloat16 into y16 as it writes it
// (linalg.RoundRowBF16; nil: not), for the products that multiply y (Pass.rounded).
func rmsNormRounding(y []float32, y16 []uint16, x, g, r, cp []float32, dim int, eps, off float32, add bool) {
	g = g[:dim]
	gains := normGains(g, off)
	linalg.ParallelRows(len(r), len(r)*dim*3, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			xr := x[t*dim : t*dim+dim]
			inv := float32(1 / math.Sqrt(float64(linalg.Dot(xr, xr)/float32(dim)+eps)))
			r[t] = inv
			yr := y[t*dim : t*dim+dim]
			if add {
				for i, v := range gains {
					yr[i] += xr[i] * inv * v
				}
			} else {
				normRow(yr, xr, gains, inv)
			}
			if cp != nil {
				copy(cp[t*dim:t*dim+dim], xr)
			}
			if y16 != nil {
				linalg.RoundRowBF16(y16, t, yr)
			}
		}
	})
}

// rmsNormApply writes y = x·r·(off+g) with the 1/rms r that rmsNormTo kept: its output again, bit for bit
// (both write a row with normRow).
func rmsNormApply(y, x, g, r []float32, dim int, off float32) {
	gains := normGains(g[:dim], off)
	linalg.ParallelRows(len(r), len(r)*dim*2, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			normRow(y[t*dim:t*dim+dim], x[t*dim:t*dim+dim], gains, r[t])
		}
	})
}

// normRow writes the normed row y = x·inv·gains, where gains are a norm's gains with their offset added
// (normGains): (x·inv)·gain per value, as the scalar loop rounds it, in one vector pass.
func normRow(y, x, gains []float32, inv float32) {
	linalg.ScaleMul(y, x, gains, inv)
}

// normGains returns off + g: the gains a row is multiplied by (Gemma's 1 + g), rounded once as the scalar
// expression x·inv·(off + g) rounded them for every row.
func normGains(g []float32, off float32) []float32 {
	if off == 0 {
		return g
	}
	out := make([]float32, len(g))
	for i, v := range g {
		out[i] = off + v
	}
	return out
}

// rmsNormBack adds to dx the gradient through y = x·r·(off+g) given dy, and to dg (when non-nil)
// Σ dy·x·r: dx = r·(dy·g') − x·r³·mean((dy·g')·x) with g' = off + g.
func rmsNormBack(dx, dg, dy, x, g, r []float32, dim int, off float32) {
	gains := normGains(g[:dim], off)
	N := len(r)
	linalg.ParallelRows(N, N*dim*6, func(lo, hi int) {
		dyg := make([]float32, dim)
		for t := lo; t < hi; t++ {
			xr, dyr, dxr := x[t*dim:t*dim+dim], dy[t*dim:t*dim+dim], dx[t*dim:t*dim+dim]
			linalg.ScaleMul(dyg, dyr, gains, 1) // dy·g': the product with 1 is exact
			inv := r[t]
			c := inv * inv * inv * linalg.Dot(dyg, xr) / float32(dim)
			linalg.NormBack(dxr, dyg, xr, inv, c)
		}
	})
	if dg == nil {
		return
	}
	// The scale gradient sums over rows: split by columns instead, each summed over the rows in order.
	linalg.ParallelRows(dim, N*dim*3, func(lo, hi int) {
		d := dg[lo:hi]
		for t, inv := range r {
			dyr, xr := dy[t*dim+lo:t*dim+hi], x[t*dim+lo:t*dim+hi]
			for i := range d {
				d[i] += dyr[i] * xr[i] * inv
			}
		}
	})
}

// swiglu writes a = silu(g)·u = g·σ(g)·u over rows of width w (σ computed into a first, vectorised in
// linalg, one row at a time so the row stays in L1).
func swiglu(a []float32, a16 []uint16, g, u []float32, w int) {
	rows := len(g) / w
	linalg.ParallelRows(rows, len(g)*8, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			ar, gr, ur := a[t*w:t*w+w], g[t*w:t*w+w], u[t*w:t*w+w]
			linalg.Sigmoid(ar, gr)
			linalg.MulProd(ar, gr, ur)
			if a16 != nil {
				linalg.RoundRowBF16(a16, t, ar)
			}
		}
	})
}

// gatedActivation writes the MLP's a = act(g)·u over rows of width c.Hidden: GeGLU or SwiGLU as c says.
// With a16 (nil: not) each row of a is also rounded to bfloat16 there, for the down projection (Pass.rounded).
func gatedActivation(c Config, a []float32, a16 []uint16, g, u []float32) {
	if c.GeluTanh {
		geglu(a, a16, g, u, c.Hidden)
	} else {
		swiglu(a, a16, g, u, c.Hidden)
	}
}

// swigluBack overwrites g with dg and u with du given da, over rows of width w (the layer's gate and up
// are read for the last time here, and writing the gradients over them reads and writes two arrays fewer
// than writing them apart): d silu(g)/dg = σ(g)·(1 + g·(1 − σ(g))), σ staged in a row of its own.
func swigluBack(g, u, da []float32, w int) {
	rows := len(g) / w
	linalg.ParallelRows(rows, len(g)*12, func(lo, hi int) {
		sig := make([]float32, w)
		for t := lo; t < hi; t++ {
			gr, ur, dar := g[t*w:t*w+w], u[t*w:t*w+w], da[t*w:t*w+w]
			linalg.Sigmoid(sig, gr)
			linalg.SwiGLUGrad(gr, ur, dar, sig)
		}
	})
}

// softmaxCausalRow turns row[0..=i] into probabilities in place and zeroes row[i+1..].
func softmaxCausalRow(row []float32, i int) {
	linalg.Softmax(row[:i+1])
	clear(row[i+1:])
}

// softmaxWindowRow turns row[lo..=i] into probabilities in place and zeroes the rest of row.
func softmaxWindowRow(row []float32, lo, i int) {
	clear(row[:lo])
	softmaxCausalRow(row[lo:], i-lo)
}

// windowStart is the first position a query at position i attends to with a window of w positions (0:
// unlimited): j with i − j < w, as transformers masks Gemma's sliding layers.
func windowStart(i, w int) int {
	if w <= 0 {
		return 0
	}
	return max(0, i-w+1)
}

// softcap replaces x by c·tanh(x/c) in place.
func softcap(x []float32, c float32) {
	for i, v := range x {
		x[i] = c * float32(math.Tanh(float64(v/c)))
	}
}

// softcapBack multiplies the gradients d w.r.t. capped values y = c·tanh(x/c) by dy/dx = 1 − (y/c)².
func softcapBack(d, y []float32, c float32) {
	for i, v := range y {
		t := v / c
		d[i] *= 1 - t*t
	}
}

// gelu_tanh(x) = ½x(1 + tanh(√(2/π)(x + 0.044715x³))) = x·σ(2z) with z the tanh's argument (so the
// vectorised sigmoid serves it as it serves SiLU).
const (
	geluC = 0.7978845608028654 // √(2/π)
	geluA = 0.044715
)

// geglu writes a = gelu_tanh(g)·u over rows of width w (σ(2z) computed into a first).
func geglu(a []float32, a16 []uint16, g, u []float32, w int) {
	rows := len(g) / w
	linalg.ParallelRows(rows, len(g)*12, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			ar, gr, ur := a[t*w:t*w+w], g[t*w:t*w+w], u[t*w:t*w+w]
			for i, x := range gr {
				ar[i] = 2 * geluC * (x + geluA*x*x*x)
			}
			linalg.Sigmoid(ar, ar)
			linalg.MulProd(ar, gr, ur)
			if a16 != nil {
				linalg.RoundRowBF16(a16, t, ar)
			}
		}
	})
}

// gegluBack is swigluBack for GeGLU, in place as it: with s = σ(2z),
// d gelu_tanh(x)/dx = s + 2x·s·(1 − s)·√(2/π)·(1 + 3·0.044715x²) (s staged in a row of its own).
func gegluBack(g, u, da []float32, w int) {
	rows := len(g) / w
	linalg.ParallelRows(rows, len(g)*16, func(lo, hi int) {
		sig := make([]float32, w)
		for t := lo; t < hi; t++ {
			gr, ur, dar := g[t*w:t*w+w], u[t*w:t*w+w], da[t*w:t*w+w]
			for i, x := range gr {
				sig[i] = 2 * geluC * (x + geluA*x*x*x)
			}
			linalg.Sigmoid(sig, sig)
			for i, x := range gr {
				s, uv := sig[i], ur[i]
				ur[i] = dar[i] * x * s
				gr[i] = dar[i] * uv * (s + 2*x*s*(1-s)*geluC*(1+3*geluA*x*x))
			}
		}
	})
}
