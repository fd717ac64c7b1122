package linalg

import (
	"fmt"
	"golang.org/x/sys/cpu"
	"math"
	"math/rand"
	randv2 "math/rand/v2"
	"testing"
	"unsafe"
)

// withEachPanel runs fn once with each panel kernel this CPU has as pairPanel — AMX tiles where Linux grants
// them, VDPBF16PS tiles where it has avx512_bf16 (an AMX Xeon has both) — and skips without either.
func withEachPanel(t *testing.T, fn func(t *testing.T)) {
	if pairProducts == nil {
		t.Skip("no pair products on this CPU (neither AMX tiles nor avx512_bf16)")
	}
	type kernel struct {
		panel  func(*pairCall)
		tiledA bool
	}
	kernels := map[string]kernel{}
	if pairsKernel == "AMX tiles" {
		kernels["amx"] = kernel{amxPanel, true}
	}
	if cpu.X86.HasAVX512BF16 {
		kernels["vdpbf16ps"] = kernel{dotPanel, false}
	}
	defer func(p func(*pairCall), tiled bool) { pairPanel, pairTiledA = p, tiled }(pairPanel, pairTiledA)
	// On, whether or not they pay on this CPU (BF16Pays), as the tests read them through the public products.
	defer SetBF16Train(BF16Train())
	defer SetBF16Dot(BF16Dot())
	SetBF16Train(true)
	SetBF16Dot(true)
	for name, k := range kernels {
		pairPanel, pairTiledA = k.panel, k.tiledA
		t.Run(name, fn)
	}
}

// lowerChunkRows sets pairChunkRows to 512, so that the tests' products of some hundreds of rows take
// several chunks, and returns what restores it.
func lowerChunkRows() func() {
	prev := pairChunkRows
	pairChunkRows = 512
	return func() { pairChunkRows = prev }
}

// TestPairs checks sgemmPairs, on each panel kernel, against a float64 product of the same bfloat16-rounded
// activations and weights: both ways of reading B, edges in every dimension (rows, columns and contraction
// values that are not multiples of a tile's), contractions longer than one block, strides past the
// matrices, alpha and beta. Every product of two bfloat16 values is exact in float32, so only the float32
// sums' rounding remains. Products x·Wᵀ are checked on a PackPairs copy of W too.
func TestPairs(t *testing.T) { withEachPanel(t, testPairs) }

func testPairs(t *testing.T) {
	defer lowerChunkRows()()
	rng := rand.New(rand.NewSource(1))
	for _, tc := range []struct{ m, n, k int }{
		{8, 1, 32}, {31, 17, 64}, {32, 32, 96}, {33, 70, 100}, {100, 45, 576}, {600, 33, 130}, {40, 64, 2200}, {64, 192, 4200},
		// Chunks of rows (lowerChunkRows) over blocks of the contraction (the panels laid out by the first
		// chunk, held for the rest).
		{1100, 70, 2200},
		// Fewer rows than a tile's (the packed products take them; dotPanel's 1-, 2- and 4-row tiles).
		{1, 70, 100}, {2, 64, 576}, {3, 96, 64}, {6, 34, 130},
	} {
		for _, transB := range []bool{true, false} {
			for _, ab := range [][2]float32{{1, 0}, {-0.7, 0.5}} {
				name := fmt.Sprintf("%dx%dx%d/transB=%v/alpha=%g,beta=%g", tc.m, tc.n, tc.k, transB, ab[0], ab[1])
				t.Run(name, func(t *testing.T) {
					m, n, k := tc.m, tc.n, tc.k
					lda, ldc := k+3, n+5
					rb, cb := k, n // B's rows and columns as stored
					if transB {
						rb, cb = n, k
					}
					ldb := cb + 2
					a := make([]float32, m*lda)
					for i := range a {
						a[i] = float32(rng.NormFloat64())
					}
					b := make([]uint16, rb*ldb)
					for i := range b {
						b[i] = ToBF16(float32(rng.NormFloat64()))
					}
					c := make([]float32, m*ldc)
					for i := range c {
						c[i] = float32(rng.NormFloat64())
					}
					want := make([]float64, len(c))
					for i := range m {
						for j := range ldc {
							want[i*ldc+j] = float64(c[i*ldc+j])
							if j >= n {
								continue // past C's columns: must not change
							}
							var s, mag float64
							for p := range k {
								var w uint16
								if transB {
									w = b[j*ldb+p]
								} else {
									w = b[p*ldb+j]
								}
								x := float64(fromBF16(ToBF16(a[i*lda+p]))) * float64(fromBF16(w))
								s += x
								mag += math.Abs(x)
							}
							want[i*ldc+j] = float64(ab[0])*s + float64(ab[1])*float64(c[i*ldc+j])
						}
					}
					c0 := append([]float32(nil), c...)
					c1 := append([]float32(nil), c...)
					SgemmBF16Train(transB, m, n, k, ab[0], a, lda, b, ldb, ab[1], c, ldc)
					check := func(form string, c []float32) {
						for i := range m {
							for j := range ldc {
								got, w := float64(c[i*ldc+j]), want[i*ldc+j]
								// float32 sums of k exact products: a few ulps of their magnitudes' sum.
								if tol := 1e-6 * float64(k) * 4; math.Abs(got-w) > tol*(1+math.Abs(w)) {
									t.Fatalf("%s: C[%d,%d] = %v, want %v", form, i, j, got, w)
								}
							}
						}
					}
					if m >= pairsMinRows { // fewer rows are not the pair products' unless the weights are packed
						check("SgemmBF16Train", c)
					}
					switch {
					case transB && k%2 == 0:
						p := PackPairs(n, k, b, ldb)
						if p.Bytes() != PackedPairsBytes(n, k) {
							t.Fatalf("PackPairs took %d bytes, PackedPairsBytes says %d", p.Bytes(), PackedPairsBytes(n, k))
						}
						SgemmPackedPairs(m, ab[0], a, lda, p, ab[1], c0, ldc)
						check("SgemmPackedPairs", c0)
						// A's rows rounded ahead (RoundRowBF16), NaN past the m rows the product may read but not
						// store: the same sums, bit for bit.
						rounded := make([]uint16, RoundedLen(m, k))
						for i := range rounded {
							rounded[i] = 0x7fc0
						}
						for i := range m {
							RoundRowBF16(rounded, i, a[i*lda:i*lda+k])
						}
						SgemmPackedPairsRounded(m, ab[0], a, lda, rounded, p, ab[1], c1, ldc)
						for i := range c1 {
							if c1[i] != c0[i] {
								t.Fatalf("SgemmPackedPairsRounded (rows rounded ahead: %v): C[%d] = %v, SgemmPackedPairs' %v",
									RoundedRows(k), i, c1[i], c0[i])
							}
						}
					case !transB && PacksPairs(k, n) && ldb%2 == 0:
						// B is W (k × n) of a product x·Wᵀ, packed for it; dy·W reads its blocks transposed, and
						// sums as SgemmBF16Train does from the row-major W (from the rows it takes to the pair
						// products): the same values in the same order.
						p := PackPairs(k, n, b, ldb)
						SgemmPackedPairsN(m, ab[0], a, lda, p, ab[1], c0, ldc)
						check("SgemmPackedPairsN", c0)
						for i := range c {
							if m >= pairsMinRows && c0[i] != c[i] {
								t.Fatalf("SgemmPackedPairsN: C[%d] = %v, SgemmBF16Train's %v", i, c0[i], c[i])
							}
						}
						row := make([]float32, n)
						for _, i := range []int{0, k / 2, k - 1} {
							p.Row(i, row)
							for j := range n {
								if row[j] != fromBF16(b[i*ldb+j]) {
									t.Fatalf("PackedPairs.Row(%d)[%d] = %v, want %v", i, j, row[j], fromBF16(b[i*ldb+j]))
								}
							}
						}
					}
				})
			}
		}
	}
}

// BenchmarkPairs is a training step's products at SmolLM2-135M's width over 256 rows (a micro-batch of 2
// sequences of 128 tokens), on the pair products (AMX tiles or VDPBF16PS tiles) and on the float32 path.
func BenchmarkPairs(b *testing.B) {
	if pairProducts == nil {
		b.Skip("no pair products on this CPU")
	}
	for _, sh := range []struct{ m, n, k int }{{32, 1536, 576}, {256, 1536, 576}, {256, 576, 1536}, {512, 4096, 576}, {512, 4096, 256}, {512, 4096, 128}} {
		for _, transB := range []bool{true, false} {
			for _, on := range []bool{true, false} {
				m, n, k := sh.m, sh.n, sh.k
				b.Run(fmt.Sprintf("%dx%dx%d/transB=%v/pairs=%v", m, n, k, transB, on), func(bb *testing.B) {
					defer SetBF16Train(BF16Train())
					SetBF16Train(on)
					a := make([]float32, m*k)
					for i := range a {
						a[i] = float32(i%7) - 3
					}
					w := make([]uint16, n*k)
					for i := range w {
						w[i] = ToBF16(float32(i%5) - 2)
					}
					c := make([]float32, m*n)
					ldb := k
					if !transB {
						ldb = n
					}
					bb.SetBytes(0)
					bb.ResetTimer()
					for range bb.N {
						SgemmBF16Train(transB, m, n, k, 1, a, k, w, ldb, 0, c, n)
					}
					bb.ReportMetric(2*float64(m*n*k)*float64(bb.N)/bb.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// pairsBenchOperands is the operands of a product with weights W (out × in, packed) over m rows: x (m × in)
// and its rows rounded ahead, and y (m × out), for BenchmarkPairsN and BenchmarkPairsGroups.
func pairsBenchOperands(m, out, in int) (p *PackedPairs, x []float32, x16 []uint16, y []float32) {
	w := make([]uint16, out*in)
	for i := range w {
		w[i] = ToBF16(float32(i%5) - 2)
	}
	x = make([]float32, m*in)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	x16 = make([]uint16, RoundedLen(m, in))
	for i := range m {
		RoundRowBF16(x16, i, x[i*in:(i+1)*in])
	}
	y = make([]float32, m*out)
	for i := range y {
		y[i] = float32(i%7) - 3
	}
	return PackPairs(out, in, w, in), x, x16, y
}

// benchPairs runs product as b's sub-benchmark name with *knob set to value, reporting the GFLOP/s of an
// m × out × in product.
func benchPairs(b *testing.B, name string, knob *int, value, m, out, in int, product func()) {
	b.Run(name, func(b *testing.B) {
		defer func(v int) { *knob = v }(*knob)
		*knob = value
		for range b.N {
			product()
		}
		b.ReportMetric(2*float64(m*out*in)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// BenchmarkPairsN is a training step's input gradients dy·W at SmolLM2-135M's shapes (W packed for x·Wᵀ, out
// × in: gate and up, down, q and o, k and v) over a micro-batch of 1,280 rows (10 sequences of 128 tokens),
// in chunks of 512 rows and of 2,048 (pairChunkRows).
func BenchmarkPairsN(b *testing.B) {
	if pairProducts == nil {
		b.Skip("no pair products on this CPU")
	}
	const m = 1280
	for _, sh := range [][2]int{{1536, 576}, {576, 1536}, {576, 576}, {192, 576}} {
		out, in := sh[0], sh[1]
		p, dx, _, dy := pairsBenchOperands(m, out, in)
		for _, chunk := range []int{512, 2048} {
			benchPairs(b, fmt.Sprintf("%dx%dx%d/chunk=%d", m, in, out, chunk), &pairChunkRows, chunk, m, out, in,
				func() { SgemmPackedPairsN(m, 1, dy, out, p, 0, dx, in) })
		}
	}
}

// BenchmarkPairsGroups is a training step's products x·Wᵀ with the frozen base (rows rounded ahead) at
// SmolLM2-135M's gate and down (a micro-batch of 1,280 rows) and Qwen2.5-0.5B's (768 rows), the rows in
// groups (pairGroupRows) and not.
func BenchmarkPairsGroups(b *testing.B) {
	if pairProducts == nil {
		b.Skip("no pair products on this CPU")
	}
	for _, sh := range [][3]int{{1280, 1536, 576}, {1280, 576, 1536}, {768, 4864, 896}, {768, 896, 4864}} {
		m, out, in := sh[0], sh[1], sh[2]
		p, x, x16, y := pairsBenchOperands(m, out, in)
		for _, rows := range []int{0, pairGroupRows} {
			benchPairs(b, fmt.Sprintf("%dx%dx%d/groups=%v", m, out, in, rows > 0), &pairGroupRows, rows, m, out, in,
				func() { SgemmPackedPairsRounded(m, 1, x, in, x16, p, 0, y, out) })
		}
	}
}

// BenchmarkPackedPairs is a decoding step's LM head at Qwen3's vocabulary (151,936 × 576) over a batch of
// rows, on the packed weights: the weights stream from memory once per product (175 MB), so it reports
// their bytes per second against the machine's bandwidth.
func BenchmarkPackedPairs(b *testing.B) {
	if pairProducts == nil {
		b.Skip("no pair products on this CPU")
	}
	const n, k = 151936, 576
	w := make([]uint16, n*k)
	for i := range w {
		w[i] = ToBF16(float32(i%5) - 2)
	}
	p := PackPairs(n, k, w, k)
	for _, m := range []int{8, 32, 64} {
		b.Run(fmt.Sprint(m), func(b *testing.B) {
			a := make([]float32, m*k)
			for i := range a {
				a[i] = float32(i%7) - 3
			}
			c := make([]float32, m*n)
			b.SetBytes(p.Bytes())
			for range b.N {
				SgemmPackedPairs(m, 1, a, k, p, 0, c, n)
			}
		})
	}
}

// TestPairsStream: a C larger than pairStreamBytes, beta 0 and rows on 64-byte boundaries is written with
// non-temporal stores (but its last panel, 16 columns wide, and its last block of 8 rows); the values are
// those of the float64 reference.
func TestPairsStream(t *testing.T) { withEachPanel(t, testPairsStream) }

func testPairsStream(t *testing.T) {
	const m, n, k = 520, 1040, 96
	rng := rand.New(rand.NewSource(2))
	a := make([]float32, m*k)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	w := make([]uint16, n*k)
	for i := range w {
		w[i] = ToBF16(float32(rng.NormFloat64()))
	}
	c := make([]float32, m*n)
	if m*n*4 < pairStreamBytes || uintptr(unsafe.Pointer(&c[0]))%64 != 0 {
		t.Fatal("the product would not stream")
	}
	for i := range c {
		c[i] = float32(math.NaN()) // beta 0: nothing of C may be read
	}
	SgemmBF16Train(true, m, n, k, 0.5, a, k, w, k, 0, c, n)
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				s += float64(fromBF16(ToBF16(a[i*k+p]))) * float64(fromBF16(w[j*k+p]))
			}
			if got := float64(c[i*n+j]); math.Abs(got-0.5*s) > 1e-4*(1+math.Abs(s)) {
				t.Fatalf("C[%d,%d] = %v, want %v", i, j, got, 0.5*s)
			}
		}
	}
}

// TestRoundTiled checks roundSteps (roundBF16AVX512 with a step) against ToBF16, for a row in one run (step
// 32) and in the tiled layout (step 32·32), on rows whose lengths end inside a step, on a 16-value boundary
// and on a step's; in the tiled layout it leaves the other rows' places alone.
func TestRoundTiled(t *testing.T) {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512BW {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewSource(3))
	for _, step := range []int{32, 1024} {
		for _, n := range []int{1, 15, 16, 17, 31, 32, 33, 48, 64, 100, 576} {
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(rng.NormFloat64())
			}
			steps := (n + 31) / 32
			dst := make([]uint16, steps*step)
			for i := range dst {
				dst[i] = 0xFFFF
			}
			roundSteps(dst, src, step)
			for s := range steps {
				for p := range 32 {
					want := uint16(0)
					if s*32+p < n {
						want = ToBF16(src[s*32+p])
					}
					if got := dst[s*step+p]; got != want {
						t.Fatalf("step %d, n=%d: value %d at step %d = %#x, want %#x", step, n, p, s, got, want)
					}
				}
				for p := 32; p < step; p++ { // the other rows' places are not touched
					if dst[s*step+p] != 0xFFFF {
						t.Fatalf("step %d, n=%d: wrote %d of step %d", step, n, p, s)
					}
				}
			}
		}
	}
}

// TestPairsLowRank: a product with packed weights that adds a low-rank term as it goes (an adapter's
// y += s·u·Bᵀ beside x·Wᵀ, dx += du·A beside dy·W) writes what the product and then Sgemm's term write, bit
// for bit: over several chunks of rows, ragged panels, both layouts of V, and rows too few for the fused
// tiles (Sgemm after the product).
func TestPairsLowRank(t *testing.T) { withEachPanel(t, testPairsLowRank) }

func testPairsLowRank(t *testing.T) {
	defer lowerChunkRows()()
	rng := rand.New(rand.NewSource(7))
	src := randv2.New(randv2.NewPCG(7, 8))
	for _, sh := range [][4]int{{1100, 96, 64, 8}, {700, 100, 576, 16}, {97, 40, 32, 8}, {64, 64, 64, 8}, {5, 64, 96, 4}, {300, 200, 2100, 8}} {
		m, n, k, r := sh[0], sh[1], sh[2], sh[3]
		for _, tc := range []struct {
			backward bool
			beta     float32
		}{{false, 0.5}, {true, 0.5}, {false, 0}, {true, 0}} {
			backward, beta := tc.backward, tc.beta
			t.Run(fmt.Sprintf("%dx%dx%d/r%d/backward=%v/beta=%v", m, n, k, r, backward, beta), func(t *testing.T) {
				w := make([]uint16, n*k) // x·Wᵀ: W n × k; dy·W reads the same W as k × n (W's rows are n)
				for i := range w {
					w[i] = ToBF16(float32(rng.NormFloat64()))
				}
				in, out := k, n
				p := PackPairs(n, k, w, k)
				if backward {
					in, out = n, k
				}
				a := randSlice(src, m*in)
				u := randSlice(src, m*r)
				lr := &LowRank{Rank: r, Alpha: 0.75, U: u, LDU: r, V: randSlice(src, out*r), LDV: r, TransV: true}
				if backward {
					lr.LDV, lr.TransV = out, false
				}
				c0 := randSlice(src, m*out)
				c1 := append([]float32(nil), c0...)
				if backward {
					SgemmPackedPairsN(m, 1, a, in, p, beta, c0, out)
					SgemmPackedPairsNPlus(m, 1, a, in, p, beta, c1, out, lr)
				} else {
					rounded := make([]uint16, RoundedLen(m, k))
					for i := range m {
						RoundRowBF16(rounded, i, a[i*k:(i+1)*k])
					}
					SgemmPackedPairsRounded(m, 1, a, in, rounded, p, beta, c0, out)
					SgemmPackedPairsRoundedPlus(m, 1, a, in, rounded, p, beta, c1, out, lr)
				}
				Sgemm(false, lr.TransV, m, out, r, lr.Alpha, u, r, lr.V, lr.LDV, 1, c0, out)
				for i := range c0 {
					if c1[i] != c0[i] {
						t.Fatalf("C[%d,%d] = %v, the product and then Sgemm's term %v", i/out, i%out, c1[i], c0[i])
					}
				}
			})
		}
	}
}

// TestFusePairs: the rows of packed matrices fused by FusePairs multiply as the matrices did apart, bit for
// bit (each output column is its own row of W's sums), into one matrix or split into one per part
// (SgemmPackedPairsSplit), and each part, now reading the fused allocation, still multiplies as before;
// parts that do not stack (a middle one not a whole number of panels, another contraction) are refused and
// left as they were.
func TestFusePairs(t *testing.T) { withEachPanel(t, testFusePairs) }

func testFusePairs(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	const k = 96
	rows := []int{64, 32, 50}
	var parts []*PackedPairs
	for _, n := range rows {
		w := make([]uint16, n*k)
		for i := range w {
			w[i] = ToBF16(float32(rng.NormFloat64()))
		}
		parts = append(parts, PackPairs(n, k, w, k))
	}
	odd := PackPairs(50, k, make([]uint16, 50*k), k)
	if FusePairs(odd, parts[0]) != nil || FusePairs(parts[0], PackPairs(32, 64, make([]uint16, 32*64), 64)) != nil {
		t.Fatal("FusePairs fused parts that do not stack")
	}
	ms := []int{1, 8, 32, 100}
	as := make([][]float32, len(ms))
	apart := make([][][]float32, len(ms)) // [m][part]
	var bytes int64
	for _, p := range parts {
		bytes += p.Bytes()
	}
	for mi, m := range ms {
		as[mi] = make([]float32, m*k)
		for i := range as[mi] {
			as[mi][i] = float32(rng.NormFloat64())
		}
		for _, p := range parts {
			c := make([]float32, m*p.Rows())
			SgemmPackedPairs(m, 1, as[mi], k, p, 0, c, p.Rows())
			apart[mi] = append(apart[mi], c)
		}
	}
	f := FusePairs(parts...)
	if f == nil || f.Rows() != 64+32+50 || f.Bytes() != bytes {
		t.Fatalf("FusePairs: %v", f)
	}
	for mi, m := range ms {
		fused := make([]float32, m*f.Rows())
		SgemmPackedPairs(m, 1, as[mi], k, f, 0, fused, f.Rows())
		split := make([][]float32, len(parts))
		for pi, p := range parts {
			split[pi] = make([]float32, m*p.Rows())
			for i := range split[pi] {
				split[pi][i] = float32(math.NaN()) // beta 0: not read
			}
		}
		SgemmPackedPairsSplit(m, as[mi], k, f, split...)
		off := 0
		for pi, p := range parts {
			again := make([]float32, m*p.Rows())
			SgemmPackedPairs(m, 1, as[mi], k, p, 0, again, p.Rows())
			for i := range m {
				for j := range p.Rows() {
					want := apart[mi][pi][i*p.Rows()+j]
					if got := fused[i*f.Rows()+off+j]; got != want {
						t.Fatalf("m=%d: fused C[%d,%d] = %v, part %d's %v", m, i, off+j, got, pi, want)
					}
					if got := split[pi][i*p.Rows()+j]; got != want {
						t.Fatalf("m=%d: split part %d C[%d,%d] = %v, want %v", m, pi, i, j, got, want)
					}
					if got := again[i*p.Rows()+j]; got != want {
						t.Fatalf("m=%d: part %d after fusing: C[%d,%d] = %v, want %v", m, pi, i, j, got, want)
					}
				}
			}
			off += p.Rows()
		}
	}
}
