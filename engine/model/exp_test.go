package model

import (
	"math"
	"testing"
)

func TestExpf(t *testing.T) {
	for x := float32(-87); x < 88; x += 0.0137 {
		got, want := float64(expf(x)), math.Exp(float64(x))
		if math.Abs(got-want) > 4e-7*want {
			t.Fatalf("expf(%g) = %g, want %g", x, got, want)
		}
	}
	if expf(-100) != 0 || !math.IsInf(float64(expf(100)), 1) {
		t.Fatal("expf does not saturate")
	}
}
