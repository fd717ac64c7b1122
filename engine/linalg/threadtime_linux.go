package linalg

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadTime is the CPU time the calling thread has run (CLOCK_THREAD_CPUTIME_ID): it stands still while the
// thread waits for a core. The wall clock where the call fails.
func threadTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ts.Nano())
}
