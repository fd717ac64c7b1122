package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// prefetchL2 writes prefetchL2: one PREFETCHT1 per 64-byte line of n bytes. Decoding attends over a
// sequence's own keys and values, a few kilobytes per head and layer that no other step of the token
// touches: too short a stream for the hardware prefetcher, so each product waited on one line after
// another (4 GB/s where the memory gives 50). Asking for the next head's lines while this one is
// multiplied keeps many misses in flight. T1 fills L2 (and on AMD, L1 too): the lines are read within
// microseconds.
func prefetchL2() {
	TEXT("prefetchL2", NOSPLIT, "func(p *float32, n int)")
	Doc("prefetchL2 asks for the n bytes from p into the L2 cache, a line at a time; it never faults.")
	p := Load(Param("p"), GP64())
	n := Load(Param("n"), GP64())
	end := GP64()
	LEAQ(Mem{Base: p, Index: n, Scale: 1}, end)
	Label("prefetch_loop")
	CMPQ(p, end)
	JAE(LabelRef("prefetch_done"))
	PREFETCHT1(Mem{Base: p})
	PREFETCHT1(Mem{Base: p, Disp: 64})
	PREFETCHT1(Mem{Base: p, Disp: 128})
	PREFETCHT1(Mem{Base: p, Disp: 192})
	ADDQ(U32(256), p)
	JMP(LabelRef("prefetch_loop"))
	Label("prefetch_done")
	RET()
}
