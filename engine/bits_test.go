package engine

import "math"

func mathBits(v float32) uint32 { return math.Float32bits(v) }
