package linalg

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// AMX (amx-bf16, Intel's Sapphire Rapids and later): a TDPBF16PS instruction multiplies a 16 × 32 tile of
// bfloat16 activations by a 32 × 16 tile of bfloat16 weights into 16 × 16 float32 sums, 16,384 multiply-adds;
// one core of the 2-core Xeon this was written on runs 3.3 TFLOP/s of them from registers, against 235 GFLOP/s
// of float32 FMAs. Linux hands the tile registers to a process only when it asks (arch_prctl
// ARCH_REQ_XCOMP_PERM, kernel 5.16 on): the kernel then saves them with the thread's state, on signals too (Go's
// 32 KiB signal stacks hold the 11 KiB frame). A kernel call loads the tile configuration, multiplies and
// releases the tiles, all within one assembly function, which Go never preempts or moves between threads.
func init() {
	if !cpu.X86.HasAMXTile || !cpu.X86.HasAMXBF16 || !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512BW {
		return
	}
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	if _, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); errno != 0 {
		return // an older kernel, or one that keeps the tiles from guests
	}
	amxConfig[0] = 1 // palette 1: eight tiles of up to 16 rows of 64 bytes
	for t := range 8 {
		amxConfig[16+2*t] = 64 // bytes per row
		amxConfig[48+t] = 16   // rows
	}
	for i := range 16 { // VPERMT2W's indices: row 2r's value, then row 2r+1's (the second table, from 32)
		pairIndex[2*i], pairIndex[2*i+1] = uint16(i), uint16(32+i)
		pairIndex[32+2*i], pairIndex[32+2*i+1] = uint16(16+i), uint16(48+i)
	}
	amxProducts = sgemmAMX
	amxPanelT = panelT
	amxPeakLoop = func(iters int) { amxPeak(iters, &amxConfig) }
	bf16Train.Store(true)
}

// amxCall is amxPanel's arguments; _asmgen/amx.go reads its fields at fixed offsets.
type amxCall struct {
	cfg      *[64]byte
	a        *uint16  // rows of bfloat16 activations, padded to a multiple of 32 rows and of 32 values
	lda      int      // bytes
	b        *uint16  // the panel: steps groups of 16 pair rows of 32 columns
	steps    int      // of 32 contraction values
	blocks   int      // of 32 rows
	c        *float32 // C's first row and column of the panel
	ldc      int      // bytes
	lastRows int      // rows of C in the last block
	mask     uint64   // C's columns of the panel: bits 0–15 and 16–31
	alpha    float32
	beta     float32 // for every block; 0: C is not read
	scratch  *float32
	stream   uint64 // nonzero: store C with non-temporal stores (beta 0, all 32 columns, 64-byte aligned rows)
}

var (
	amxConfig [64]byte
	pairIndex [64]uint16
)

const (
	// amxBlockSteps is the most steps of 32 contraction values one pass multiplies: a panel of 2,048 is
	// 128 KiB and stays in L2 with the rows of A that pass over it; longer contractions (the LM head's
	// input gradient, over the vocabulary) add up blocks.
	amxBlockSteps = 64
	// amxChunkRows is the most rows of A one pass rounds and multiplies: 512 rows of a 2,048-value block
	// are 2 MiB of bfloat16, read again by every panel.
	amxChunkRows = 512
	// amxStreamBytes is the size of C from which it is written with non-temporal stores: past a core's L2
	// it would be evicted before anyone reads it, and reading its lines for ownership first doubles the
	// traffic of products that are bandwidth-bound already (an LM head's logits, 19 MB a decoding step of 32
	// rows at Qwen3's vocabulary).
	amxStreamBytes = 2 << 20
)

// sgemmAMX computes C = alpha·A·op(B) + beta·C for the m × k row-major float32 A (stride lda) and the
// bfloat16 B: n × k row-major (stride ldb) with op(B) = Bᵀ when transB (x·Wᵀ), k × n when not (dy·W). A is
// rounded to bfloat16 (nearest, ties to even) a block of rows and contraction values at a time; B goes into
// AMX's pair layout one panel of 32 columns at a time, by the worker that multiplies it. Sums are float32.
// transB needs k and ldb even (the pairs are 32-bit words of B's rows). With pre (transB only) the panels
// are read from it, and b is not.
func sgemmAMX(transB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, pre *PackedAMX,
	beta float32, c []float32, ldc int) {
	steps := (k + 31) / 32
	nb := (steps + amxBlockSteps - 1) / amxBlockSteps
	blockSteps := (steps + nb - 1) / nb
	chunk := min(roundUp(m, 32), amxChunkRows)
	panels := (n + 31) / 32
	a16 := scratch16.get(chunk * blockSteps * 32)
	defer scratch16.put(a16)
	workers, release := acquireWorkers(m, n, k)
	defer release()
	// Workers claim runs of panels: one claim per panel of an LM head (thousands) made the claims' shared
	// counter a tenth of a decoding step.
	per := max(1, min(16, panels/(8*workers)))
	// Each worker's panel buffer (unless pre holds the panels) and 32 × 32 block of sums, from the free
	// lists: a decoding step makes hundreds of these products.
	bufs := make([]*[]uint16, workers)
	outs := make([]*[]float32, workers)
	defer func() {
		for w := range workers {
			if bufs[w] != nil {
				scratch16.put(bufs[w])
			}
			if outs[w] != nil {
				putScratch(outs[w])
			}
		}
	}()
	work := func(w int) (buf []uint16, out []float32) {
		if outs[w] == nil {
			outs[w] = getScratch(32 * 32)
		}
		if pre == nil && bufs[w] == nil {
			bufs[w] = scratch16.get(blockSteps * 32 * 32)
		}
		if bufs[w] != nil {
			buf = *bufs[w]
		}
		return buf, *outs[w]
	}
	// Streaming needs every row of C on a 64-byte boundary, as Go's large allocations are.
	stream := int64(m)*int64(n)*4 >= amxStreamBytes && beta == 0 && k <= blockSteps*32 && (4*ldc)%64 == 0 &&
		uintptr(unsafe.Pointer(&c[0]))%64 == 0
	for p0 := 0; p0 < k; p0 += blockSteps * 32 {
		kcur := min(blockSteps*32, k-p0)
		st := (kcur + 31) / 32
		ld := st * 32 // a16's row stride
		bt := beta
		if p0 > 0 {
			bt = 1
		}
		for i0 := 0; i0 < m; i0 += chunk {
			rows := min(chunk, m-i0)
			blocks := (rows + 31) / 32
			as := (*a16)[:blocks*32*ld]
			parallelFor(workers, blocks, func(_, blk int) {
				for i := blk * 32; i < min(rows, blk*32+32); i++ {
					roundRow(as[i*ld:(i+1)*ld], a[(i0+i)*lda+p0:(i0+i)*lda+p0+kcur])
				}
			})
			panel := func(w, jp int) {
				j0 := jp * 32
				cols := min(32, n-j0)
				mask := uint32(1)<<cols - 1
				buf, out := work(w)
				switch {
				case pre != nil:
					buf = pre.panel(jp)[p0/32*16*64:]
				case transB:
					buf = buf[:st*32*32]
					panelT(buf, b, ldb, j0, cols, p0, kcur)
				default:
					buf = buf[:st*32*32]
					packPairs32AVX512(&buf[0], &b[p0*ldb+j0], kcur, ldb, mask, &pairIndex[0])
					clear(buf[(kcur+1)/2*64:])
				}
				amxPanel(&amxCall{cfg: &amxConfig, a: &as[0], lda: 2 * ld, b: &buf[0], steps: st, blocks: blocks,
					c: &c[i0*ldc+j0], ldc: 4 * ldc, lastRows: rows - (blocks-1)*32, mask: uint64(mask),
					alpha: alpha, beta: bt, scratch: &out[0], stream: boolWord(stream && cols == 32)})
			}
			parallelFor(workers, (panels+per-1)/per, func(w, u int) {
				for jp := u * per; jp < min(panels, u*per+per); jp++ {
					panel(w, jp)
				}
			})
		}
	}
}

// panelT writes the panel of W's rows j0 .. j0+cols-1 over contraction values p0 .. p0+kc-1 (both even) in
// the pair layout: row r holds, for each of the panel's rows j, the 32-bit word of W[j] with values p0+2r
// and p0+2r+1 — the transposed packing of float32 panels, on words. Rows past kc/2 are zero.
func panelT(dst, w []uint16, ldw, j0, cols, p0, kc int) {
	pairs := kc / 2
	_ = w[(j0+cols-1)*ldw+p0+kc-1]
	words := unsafe.Slice((*float32)(unsafe.Pointer(&w[0])), len(w)/2)
	packB32AVX512((*float32)(unsafe.Pointer(&dst[0])), &words[(j0*ldw+p0)/2], pairs, cols, ldw/2, true)
	clear(dst[pairs*64 : (kc+31)/32*32*32])
}

// roundRow rounds src to bfloat16 into dst and zeroes the rest of dst.
func roundRow(dst []uint16, src []float32) {
	n16 := len(src) &^ 15
	if n16 > 0 {
		roundBF16AVX512(&dst[0], &src[0], n16)
	}
	for p := n16; p < len(src); p++ {
		dst[p] = ToBF16(src[p])
	}
	clear(dst[len(src):])
}

func boolWord(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
