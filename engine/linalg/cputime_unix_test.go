//go:build unix

package linalg

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the whole process (every thread, OpenBLAS's included) has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
