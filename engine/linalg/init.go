//go:build !openblas

package linalg

func init() {
	if ks := simdKernels(); len(ks) > 0 {
		kernel = ks[0]
		backend = ks[0].name
	}
}
