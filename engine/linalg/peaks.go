package linalg

import (
	"math"
	"runtime"
	"time"
)

// Peak loops: independent multiply-adds on registers only (generated: _asmgen/peak.go, the AMX tiles'
// in _asmgen/amx.go), which run at the rate the core retires them. internal/roofline measures the machine's
// arithmetic peaks with them, and this package compares two of them once per process to decide whether
// bfloat16 dot products pay on this core (dotOutrunsFMA).

// peakLoop is one such loop, the FLOPs of one of its iterations and the instruction's name.
type peakLoop struct {
	run   func(iters int)
	flops float64
	name  string
}

// fmaLoop (the widest float32 FMAs here) and dotLoop (VDPBF16PS, avx512_bf16) are set where the CPU has
// them (peakLoops; package variables, so that every init, pairs_amd64.go's among them, sees them set).
var fmaLoop, dotLoop = peakLoops()

// FMALoop returns the loop of the widest float32 multiply-adds this CPU has, the FLOPs of one iteration and
// the instruction's name (nil, 0, "" where there is none: not amd64, or no FMA).
func FMALoop() (func(iters int), float64, string) { return fmaLoop.run, fmaLoop.flops, fmaLoop.name }

// DotLoop returns the loop of bfloat16 dot products (VDPBF16PS) where the CPU has avx512_bf16, as FMALoop.
func DotLoop() (func(iters int), float64, string) { return dotLoop.run, dotLoop.flops, dotLoop.name }

// amxPeakLoop, when set, runs iterations of 8 TDPBF16PS on register tiles (AMXLoop).
var amxPeakLoop func(iters int)

// AMXLoop returns a loop of AMX tile products that never leave the registers and its FLOPs per iteration
// (8 TDPBF16PS of 16 × 16 × 32 multiply-adds): what a machine's roofline measures as its cores' bfloat16
// tile peak. nil where the CPU has no AMX tiles.
func AMXLoop() (func(iters int), float64) {
	if amxPeakLoop == nil {
		return nil, 0
	}
	return amxPeakLoop, 8 * 16 * 16 * 32 * 2
}

// dotOutrunsFMA reports whether bfloat16 dot products do at least dotMargin times the multiply-adds per
// second of float32 FMAs on this core: the best of five short runs of each loop, interleaved, on one thread
// (about 3 ms). Which holds depends on the core, not on the instruction set: AMD's Zen 4 and 5 issue a
// VDPBF16PS, two multiply-adds a lane, at the FMAs' rate (2.0×: the pair products and dot tiles then do twice
// the work per instruction), an Intel Emerald Rapids Xeon issues it at a quarter of their rate (0.5×: a
// training step over the pair products took 16–18 s, over the float32 panel tiles 11–12 s). The two are so
// far apart that a margin anywhere between them decides the same way under any load; dotMargin leaves the
// rounding of the activations (a cost the float32 tiles do not pay) a clear gain to buy.
//
// Each run is timed on its thread's CPU clock (threadTime), not the wall clock: a process that starts while
// others hold the cores (a worker beside a training step, the tests of CI in parallel) had its thread
// descheduled in the middle of the runs, and with 2 cores and two 2-thread training steps beside it, 1 start
// in 40 on a Zen 5 EPYC decided that the dot products do not pay, halving its training speed for its life.
func dotOutrunsFMA() bool {
	if dotLoop.run == nil || fmaLoop.run == nil {
		return false
	}
	const iters = 1 << 15  // 0.1–0.4 ms a run
	runtime.LockOSThread() // the thread whose clock times the runs runs them
	defer runtime.UnlockOSThread()
	timed := func(l peakLoop) time.Duration {
		start := threadTime()
		l.run(iters)
		return threadTime() - start
	}
	timed(fmaLoop) // warm-up: a core's first wide instructions can run slower
	timed(dotLoop)
	tf, td := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range 5 {
		tf, td = min(tf, timed(fmaLoop)), min(td, timed(dotLoop))
	}
	return dotLoop.flops/td.Seconds() >= dotMargin*fmaLoop.flops/tf.Seconds()
}

// dotMargin is how many times the FMAs' multiply-adds per second the dot products must do to be used.
const dotMargin = 1.25
