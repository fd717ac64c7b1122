//go:build !linux

package linalg

import "time"

// threadTime is the wall clock where no per-thread CPU clock is read (threadtime_linux.go): a run then counts
// the time its thread waited for a core too.
func threadTime() time.Duration { return time.Duration(time.Now().UnixNano()) }
