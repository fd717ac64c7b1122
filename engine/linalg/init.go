package linalg

// init picks the fastest implementation available: OpenBLAS in openblas builds, otherwise the best assembly
// kernel this CPU supports, otherwise the generic Go kernel.
func init() {
	useSIMDVectors()
	useSmallRows()
	if ks := simdKernels(); len(ks) > 0 {
		kernel = ks[0]
		backend = ks[0].name
	}
	if openblasGemm != nil {
		sgemm = openblasGemm
		backend = "openblas"
	}
}
