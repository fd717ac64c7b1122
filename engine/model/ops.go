package model

import (
	"math"

	"github.com/trainyard/trainyard/engine/linalg"
)

// ropeTable caches cos/sin of position·θ^(-2i/headDim) for every position and frequency.
type ropeTable struct {
	half     int
	cos, sin []float32 // [maxSeqLen × half]
}

func newRopeTable(c Config) *ropeTable {
	half := c.HeadDim / 2
	t := &ropeTable{half: half, cos: make([]float32, c.MaxSeqLen*half), sin: make([]float32, c.MaxSeqLen*half)}
	for p := 0; p < c.MaxSeqLen; p++ {
		for i := 0; i < half; i++ {
			ang := float64(p) * math.Pow(c.RopeTheta, -2*float64(i)/float64(c.HeadDim))
			t.cos[p*half+i] = float32(math.Cos(ang))
			t.sin[p*half+i] = float32(math.Sin(ang))
		}
	}
	return t
}

// apply rotates every head of row (heads × headDim) at position pos, rotate-half layout:
// x'[i] = x[i]·cos − x[i+h]·sin, x'[i+h] = x[i+h]·cos + x[i]·sin. inverse applies the transpose (the
// backward pass of the rotation).
func (t *ropeTable) apply(row []float32, heads, pos int, inverse bool) {
	h := t.half
	cs, sn := t.cos[pos*h:pos*h+h], t.sin[pos*h:pos*h+h]
	for hd := 0; hd < heads; hd++ {
		x := row[hd*2*h : hd*2*h+2*h]
		for i := 0; i < h; i++ {
			a, b, c, s := x[i], x[i+h], cs[i], sn[i]
			if inverse {
				s = -s
			}
			x[i] = a*c - b*s
			x[i+h] = b*c + a*s
		}
	}
}

// rmsNorm writes y = x·r·g per row with r = 1/sqrt(mean(x²)+eps) and records r per row.
func rmsNorm(y, x, g, r []float32, dim int, eps float32) {
	for t := range r {
		xr := x[t*dim : t*dim+dim]
		var ss float32
		for _, v := range xr {
			ss += v * v
		}
		inv := float32(1 / math.Sqrt(float64(ss/float32(dim)+eps)))
		r[t] = inv
		yr := y[t*dim : t*dim+dim]
		for i, v := range xr {
			yr[i] = v * inv * g[i]
		}
	}
}

// rmsNormBack adds to dx the gradient through y = x·r·g given dy, and to dg (when non-nil) Σ dy·x·r:
// dx = r·(dy·g) − x·r³·mean((dy·g)·x).
func rmsNormBack(dx, dg, dy, x, g, r []float32, dim int) {
	for t := range r {
		xr, dyr, dxr := x[t*dim:t*dim+dim], dy[t*dim:t*dim+dim], dx[t*dim:t*dim+dim]
		inv := r[t]
		var dot float32
		for i, v := range xr {
			dot += dyr[i] * g[i] * v
		}
		c := inv * inv * inv * dot / float32(dim)
		for i, v := range xr {
			dxr[i] += inv*dyr[i]*g[i] - c*v
		}
		if dg != nil {
			for i, v := range xr {
				dg[i] += dyr[i] * v * inv
			}
		}
	}
}

// swiglu writes a = silu(g)·u = g·σ(g)·u (σ computed into a first, vectorised in linalg).
func swiglu(a, g, u []float32) {
	linalg.Sigmoid(a, g)
	for i, gv := range g {
		a[i] *= gv * u[i]
	}
}

// swigluBack writes dg and du from da: d silu(g)/dg = σ(g)·(1 + g·(1 − σ(g))) (σ staged in dg).
func swigluBack(dg, du, da, g, u []float32) {
	linalg.Sigmoid(dg, g)
	for i, gv := range g {
		s := dg[i]
		du[i] = da[i] * gv * s
		dg[i] = da[i] * u[i] * s * (1 + gv*(1-s))
	}
}

// softmaxCausalRow turns row[0..=i] into probabilities in place and zeroes row[i+1..].
func softmaxCausalRow(row []float32, i int) {
	linalg.Softmax(row[:i+1])
	clear(row[i+1:])
}
