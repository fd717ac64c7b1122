package roofline

import "golang.org/x/sys/cpu"

//go:noescape
func fmaAVX512(iters int)

//go:noescape
func fmaAVX2(iters int)

//go:noescape
func dotBF16AVX512(iters int)

// fmaLoop is the widest float32 multiply-add loop this CPU runs, its FLOPs per iteration and its name.
func fmaLoop() (func(int), float64, string) {
	switch {
	case cpu.X86.HasAVX512F:
		return fmaAVX512, 12 * 16 * 2, "AVX-512 FMA"
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return fmaAVX2, 12 * 8 * 2, "AVX2 FMA"
	}
	return nil, 0, ""
}

// dotLoop is the bfloat16 dot-product loop where the CPU has avx512_bf16 (nil elsewhere).
func dotLoop() (func(int), float64, string) {
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16 {
		return dotBF16AVX512, 16 * 16 * 2 * 2, "AVX-512 BF16 dot"
	}
	return nil, 0, ""
}
