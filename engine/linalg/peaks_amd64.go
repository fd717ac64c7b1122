package linalg

import "golang.org/x/sys/cpu"

// peakLoops returns the loops of the widest float32 FMAs and of VDPBF16PS this CPU has.
func peakLoops() (fma, dot peakLoop) {
	switch {
	case cpu.X86.HasAVX512F:
		fma = peakLoop{fmaPeakAVX512, 12 * 16 * 2, "AVX-512 FMA"}
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		fma = peakLoop{fmaPeakAVX2, 12 * 8 * 2, "AVX2 FMA"}
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16 {
		dot = peakLoop{dotPeak, 16 * 16 * 2 * 2, "AVX-512 BF16 dot"}
	}
	return fma, dot
}
