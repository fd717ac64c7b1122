package prefault

import (
	"runtime"
	"syscall"
	"testing"
)

// TestSliceMapsThePagesIn: after Slice, writing every page of a fresh 64 MiB buffer takes (almost) no page
// faults; without it, one a page.
func TestSliceMapsThePagesIn(t *testing.T) {
	const size, page = 64 << 20, 4096
	runtime.LockOSThread() // the fault counts are this thread's
	defer runtime.UnlockOSThread()
	faults := func(populated bool) int64 {
		b := make([]byte, size)
		if populated {
			if err := populate(b); err != nil {
				t.Skipf("MADV_POPULATE_WRITE: %v (Linux before 5.14?)", err)
			}
		}
		var before, after syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &before); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < size; i += page {
			b[i] = 1
		}
		if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &after); err != nil {
			t.Fatal(err)
		}
		return after.Minflt - before.Minflt
	}
	plain, populated := faults(false), faults(true)
	t.Logf("minor faults writing %d pages: %d without populating, %d after", size/page, plain, populated)
	if populated > size/page/100 {
		t.Errorf("%d page faults writing a populated buffer of %d pages", populated, size/page)
	}
}
