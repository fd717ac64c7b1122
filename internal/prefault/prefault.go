// Package prefault maps fresh memory in before it is written. The engine's large buffers (a training
// pass's arena, a chunk of logits, a base's packed weights) are written right after they are allocated,
// and every 4 KiB page of them used to trap into the kernel on its first write: about 260,000 faults for
// a 1 GiB activation arena, 2–3 s of system time a first training step on the 2-core Zen 5 VM, where a
// fault costs the hypervisor an exit. One madvise(MADV_POPULATE_WRITE) (Linux 5.14) maps a whole buffer
// at once.
//
// The pages stay 4 KiB ones. Asking for transparent huge pages on the same buffers (MADV_HUGEPAGE on their
// 2 MiB-aligned interiors before populating; the hosts here grant them only on request) was tried: the
// kernel gave 1.2 GB of the 135M step's memory as huge pages, and the step got slower, not faster, on the
// 2-core Zen 5 VM (`bin/enginebench -work sft`, interleaved with the 4 KiB build: 8.07 and 8.23 s against
// 7.34 and 7.72 held to float32 FMAs, 5.31 and 5.27 against 5.09 and 4.98 by default).
package prefault

// Slice maps in the whole pages of s's memory for writing, where the system can; elsewhere, and on
// failure (an older kernel), nothing happens and the pages fault in as they are written, as before.
func Slice[T any](s []T) {
	if len(s) == 0 {
		return
	}
	_ = populate(s)
}
