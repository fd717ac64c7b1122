package prefault

import (
	"syscall"
	"unsafe"
)

const madvPopulateWrite = 23

func populate[T any](s []T) error {
	const page = 4096
	bytes := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*unsafe.Sizeof(s[0]))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(bytes)))
	lo := int((start+page-1)&^(page-1) - start) // madvise takes whole pages, from a page boundary
	hi := lo + (len(bytes)-lo)&^(page-1)
	if lo >= len(bytes) || hi <= lo {
		return nil
	}
	// The pages stay part of the Go object they belong to; the kernel only maps them in. Fresh pages come
	// zeroed, as the allocation promises, and pages already mapped keep their contents.
	return syscall.Madvise(bytes[lo:hi], madvPopulateWrite)
}
