package linalg

import (
	"testing"
	"time"
)

// The instruction loops this CPU has run, report their FLOPs and take time in proportion to their
// iterations (a loop that returned early would make every peak, and dotOutrunsFMA, a fiction).
func TestPeakLoops(t *testing.T) {
	for _, pick := range []func() (func(int), float64, string){FMALoop, DotLoop} {
		loop, flops, name := pick()
		if loop == nil {
			continue
		}
		if flops <= 0 || name == "" {
			t.Errorf("%q: %v FLOPs an iteration", name, flops)
		}
		loop(1 << 12) // warm-up
		short, long := time.Hour, time.Hour
		for range 5 {
			start := time.Now()
			loop(1 << 12)
			short = min(short, time.Since(start))
			start = time.Now()
			loop(1 << 16)
			long = min(long, time.Since(start))
		}
		if long < 4*short {
			t.Errorf("%s: 16 times the iterations took %v against %v", name, long, short)
		}
		t.Logf("%s: %.1f GFLOP/s on one thread", name, flops*(1<<16)/long.Seconds()/1e9)
	}
	if loop, flops := AMXLoop(); loop != nil {
		loop(1000) // the tiles configured, multiplied and released from any goroutine
		if flops != 8*16*16*32*2 {
			t.Errorf("AMX loop: %v FLOPs an iteration", flops)
		}
	}
}

// The bfloat16 products pay (and are on by default) where the measured decision says so, and never without
// the instructions.
func TestBF16Pays(t *testing.T) {
	if want := Pairs() && (PairsKernel() == "AMX tiles" || dotOutrunsFMA()); BF16Pays() != want {
		t.Errorf("BF16Pays %v, measured again %v (%s)", BF16Pays(), want, PairsKernel())
	}
	_, _, fma := FMALoop()
	_, _, dot := DotLoop()
	t.Logf("%s, %s: the bfloat16 products pay: %v", fma, dot, BF16Pays())
}
