// Package prefault maps fresh memory in before it is written. The engine's large buffers (a training
// pass's arena, a chunk of logits, a base's packed weights) are written right after they are allocated,
// and every 4 KiB page of them used to trap into the kernel on its first write: about 260,000 faults for
// a 1 GiB activation arena, 2–3 s of system time a first training step on the 2-core Zen 5 VM, where a
// fault costs the hypervisor an exit. One madvise(MADV_POPULATE_WRITE) (Linux 5.14) maps a whole buffer
// at once.
package prefault

// Slice maps in the whole pages of s's memory for writing, where the system can; elsewhere, and on
// failure (an older kernel), nothing happens and the pages fault in as they are written, as before.
func Slice[T any](s []T) {
	if len(s) == 0 {
		return
	}
	_ = populate(s)
}
