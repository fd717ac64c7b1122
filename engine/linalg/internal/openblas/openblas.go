// Package openblas links Debian's libopenblas (see ../../install-openblas.sh) and exposes its sgemm in the
// row-major form linalg uses. It is a package of its own because a cgo package cannot hold the Go assembly
// kernels of linalg; only builds with the openblas tag import it.
package openblas

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
import "C"

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
)

// Sgemm computes C = alpha*op(A)*op(B) + beta*C on row-major matrices with as many threads as SetThreads last
// allowed (all cores until then); arguments are as for linalg.Sgemm.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	netlib.Implementation{}.Sgemm(transpose(transA), transpose(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func transpose(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// SetThreads sets how many threads OpenBLAS uses for each call, process-wide.
func SetThreads(n int) {
	C.openblas_set_num_threads(C.int(n))
}
