package roofline

import (
	"testing"

	"github.com/trainyard/trainyard/engine/linalg"
)

// The instruction loops this CPU has run and report a rate (the AVX-512 ones only on such a CPU).
func TestInstructionLoopsRun(t *testing.T) {
	t.Parallel()
	for _, pick := range []func() (func(int), float64, string){fmaLoop, dotLoop} {
		loop, flops, name := pick()
		if loop == nil {
			continue
		}
		loop(1000)
		if flops <= 0 || name == "" {
			t.Errorf("%q: %v FLOPs an iteration", name, flops)
		}
	}
	if loop, flops := linalg.AMXLoop(); loop != nil {
		loop(1000) // the tiles configured, multiplied and released from any goroutine
		if flops != 8*16*16*32*2 {
			t.Errorf("AMX loop: %v FLOPs an iteration", flops)
		}
	}
}
