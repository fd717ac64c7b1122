//go:build !unix

package linalg

import "time"

// processCPU is unavailable here; benchmarks then report no CPU-time metric.
func processCPU() time.Duration { return 0 }
