package linalg

import "golang.org/x/sys/cpu"

// The register-tiled kernels (tiles_bf16_amd64.s, written by _asmgen with avo) for a few dozen rows of
// activations times bfloat16 weights: decoding a batch of sequences. AVX-512 tiles take 4 rows of A and 16
// values of k a step; AVX2 tiles, with half the registers, 3 rows and 8 values.
func init() {
	if cpu.X86.HasAVX2 {
		widenT8 = widenT8x8BF16AVX2
		widenTPanel = widenTPanelBF16AVX2
	}
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL:
		tiles = tileSet{rows: 4, lanes: 16, kernels: [5]tileKernel{1: dotTile1x4BF16AVX512, 2: dotTile2x4BF16AVX512,
			3: dotTile3x4BF16AVX512, 4: dotTile4x4BF16AVX512}}
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		tiles = tileSet{rows: 3, lanes: 8, kernels: [5]tileKernel{1: dotTile1x4BF16AVX2, 2: dotTile2x4BF16AVX2,
			3: dotTile3x4BF16AVX2}}
	default:
		return
	}
	tilesBF16 = tilesBF16Asm
}

// tileKernel computes a tile of rows of A by 4 rows of B over k values, a multiple of the lanes.
type tileKernel func(k int, a *float32, lda int, b *uint16, ldb int, out *float32)

// tileSet is the CPU's tiles: kernels[mr] takes mr ≤ rows rows of A.
type tileSet struct {
	rows, lanes int
	kernels     [5]tileKernel
}

var tiles tileSet

// tilesBF16Asm computes C = alpha·A·Bᵀ + beta·C for m rows of A (row-major) with B stored n × k in
// bfloat16, a tile of tiles.rows rows of A by 4 rows of B at a time. The columns of C are split among the
// workers; within a worker's chunk each group of 4 rows of B is read from memory once, stays in L1 while
// every group of rows of A (in L2) passes over it, and is widened in registers: nothing is widened into
// memory or packed, so the weights stream once per step whatever the batch, at the FMA units' rate.
func tilesBF16Asm(m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	ts := tiles
	k16 := k - k%ts.lanes
	workers, release := acquireStreamWorkers(2 * n * k)
	defer release()
	chunk := max(4, streamChunk(n, workers, 32)&^3)
	parallelFor(workers, (n+chunk-1)/chunk, func(_, ch int) {
		var out [16]float32
		j1 := min(n, (ch+1)*chunk)
		for j := ch * chunk; j < j1; j += 4 {
			if j+4 > j1 { // the last rows of B, fewer than a tile
				for jj := j; jj < j1; jj++ {
					for i := range m {
						merge(c, i*ldc+jj, alpha*dotBF16(a[i*lda:i*lda+k], b[jj*ldb:jj*ldb+k]), beta)
					}
				}
				break
			}
			for i := 0; i < m; i += ts.rows {
				mr := min(ts.rows, m-i)
				ts.kernels[mr](k16, &a[i*lda], lda, &b[j*ldb], ldb, &out[0])
				for ii := range mr {
					for jj := range 4 {
						s := out[ii*4+jj]
						for p := k16; p < k; p++ { // a k that is not a multiple of the lanes
							s += a[(i+ii)*lda+p] * fromBF16(b[(j+jj)*ldb+p])
						}
						merge(c, (i+ii)*ldc+j+jj, alpha*s, beta)
					}
				}
			}
		}
	})
}
