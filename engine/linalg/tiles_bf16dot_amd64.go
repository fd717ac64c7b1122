package linalg

// Products with bfloat16 dot products (avx512_bf16, tiles_bf16dot_amd64.s; tilesDot, set by pairs_amd64.go's
// init with the decision whether they are on by default): the rows of activations are rounded to bfloat16
// once per product, then every tile multiplies pairs of bfloat16 values straight from the weights as stored,
// twice the multiply-adds of the float32 tiles per instruction.

var dotKernels = [5]func(k int, a *uint16, lda int, b *uint16, ldb int, c *float32, ldc int, alpha, beta float32){
	1: dotTile1x4BF16DOT, 2: dotTile2x4BF16DOT, 3: dotTile3x4BF16DOT, 4: dotTile4x4BF16DOT,
}

// tilesDotBF16 is tilesBF16Asm with op(A) rounded to bfloat16 and the tiles' products in bfloat16 pairs,
// accumulated in float32; the tiles write C themselves.
func tilesDotBF16(m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	a16 := scratch16.get(m * k)
	defer scratch16.put(a16)
	as := *a16
	k16 := k &^ 15
	for i := range m {
		row := a[i*lda : i*lda+k]
		if k16 > 0 {
			roundBF16AVX512(&as[i*k], &row[0], k16, 64)
		}
		for p := k16; p < k; p++ {
			as[i*k+p] = ToBF16(row[p])
		}
	}
	k32 := k &^ 31
	workers, release := acquireStreamWorkers(2 * n * k)
	defer release()
	chunk := max(4, streamChunk(n, workers, 32)&^3)
	parallelFor(workers, (n+chunk-1)/chunk, func(_, ch int) {
		j1 := min(n, (ch+1)*chunk)
		for j := ch * chunk; j < j1; j += 4 {
			if j+4 > j1 { // the last rows of B, fewer than a tile
				for jj := j; jj < j1; jj++ {
					for i := range m {
						var s float32
						for p := range k {
							s += fromBF16(as[i*k+p]) * fromBF16(b[jj*ldb+p])
						}
						merge(c, i*ldc+jj, alpha*s, beta)
					}
				}
				break
			}
			for i := 0; i < m; i += 4 {
				mr := min(4, m-i)
				_ = c[(i+mr-1)*ldc+j+3] // the tile writes 4 values in each of its rows
				dotKernels[mr](k32, &as[i*k], k, &b[j*ldb], ldb, &c[i*ldc+j], ldc, alpha, beta)
				for p := k32; p < k; p++ { // a k that is not a multiple of 32: the tile left these out
					for ii := range mr {
						x := alpha * fromBF16(as[(i+ii)*k+p])
						for jj := range 4 {
							c[(i+ii)*ldc+j+jj] += x * fromBF16(b[(j+jj)*ldb+p])
						}
					}
				}
			}
		}
	})
}

// scratch16 holds the rows of activations rounded to bfloat16.
var scratch16 = make(freeList[uint16], 4)
