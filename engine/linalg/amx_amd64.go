package linalg

import (
	"syscall"

	"golang.org/x/sys/cpu"
)

// AMX (amx-bf16, Intel's Sapphire Rapids and later): a TDPBF16PS instruction multiplies a 16 × 32 tile of
// bfloat16 activations by a 32 × 16 tile of bfloat16 weights into 16 × 16 float32 sums, 16,384 multiply-adds;
// one core of the 2-core Xeon this was written on runs 3.3 TFLOP/s of them from registers, against 235 GFLOP/s
// of float32 FMAs. Linux hands the tile registers to a process only when it asks (arch_prctl
// ARCH_REQ_XCOMP_PERM, kernel 5.16 on): the kernel then saves them with the thread's state, on signals too (Go's
// 32 KiB signal stacks hold the 11 KiB frame). A kernel call loads the tile configuration, multiplies and
// releases the tiles, all within one assembly function, which Go never preempts or moves between threads.
//
// amxGranted reports whether this CPU has the tiles and Linux handed them to this process, and sets the
// tile configuration the kernels load.
func amxGranted() bool {
	if !cpu.X86.HasAMXTile || !cpu.X86.HasAMXBF16 || !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512BW {
		return false
	}
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	if _, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); errno != 0 {
		return false // an older kernel, or one that keeps the tiles from guests
	}
	amxConfig[0] = 1 // palette 1: eight tiles of up to 16 rows of 64 bytes
	for t := range 8 {
		amxConfig[16+2*t] = 64 // bytes per row
		amxConfig[48+t] = 16   // rows
	}
	return true
}

var amxConfig [64]byte
