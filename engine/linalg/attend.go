package linalg

import "fmt"

// AttendScores sets s[i·lds+t] = scale·(q_i·k_t) for i < rows and t < n, where q_i = q[i·ldq:][:hd] and
// k_t = k[t·hd:][:hd]: a decoding step's query rows (the query heads that share a key/value head) scored
// against n cached keys of that head.
func AttendScores(q []float32, ldq, rows int, k []float32, hd, n int, scale float32, s []float32, lds int) {
	if rows <= 0 || n == 0 {
		return
	}
	if len(q) < (rows-1)*ldq+hd || len(k) < n*hd || len(s) < (rows-1)*lds+n {
		panic(fmt.Sprintf("linalg.AttendScores: q %d, k %d, s %d values for %d rows (strides %d, %d), hd %d and %d keys",
			len(q), len(k), len(s), rows, ldq, lds, hd, n))
	}
	attScores(q, ldq, rows, k, hd, n, scale, s, lds)
}

// AttendWeigh sets out[i·ldo:][:hd] to Σ_{t<n} w[i·ldw+t]·v_t for i < rows, where v_t = v[t·hd:][:hd], or
// adds those sums to it when add is set: the attention output of a decoding step's query rows over n cached
// values of their head, given the rows' weights.
func AttendWeigh(w []float32, ldw, rows int, v []float32, hd, n int, out []float32, ldo int, add bool) {
	if rows <= 0 {
		return
	}
	if len(w) < (rows-1)*ldw+n || len(v) < n*hd || len(out) < (rows-1)*ldo+hd {
		panic(fmt.Sprintf("linalg.AttendWeigh: w %d, v %d, out %d values for %d rows (strides %d, %d), hd %d and %d values",
			len(w), len(v), len(out), rows, ldw, ldo, hd, n))
	}
	attWeigh(w, ldw, rows, v, hd, n, out, ldo, add)
}

// attendScoresSgemm is AttendScores as a product (Sgemm's few-row kernels on AVX-512, its generic paths
// elsewhere).
func attendScoresSgemm(q []float32, ldq, rows int, k []float32, hd, n int, scale float32, s []float32, lds int) {
	Sgemm(false, true, rows, n, hd, scale, q, ldq, k, hd, 0, s, lds)
}

// attendWeighSgemm is AttendWeigh as a product.
func attendWeighSgemm(w []float32, ldw, rows int, v []float32, hd, n int, out []float32, ldo int, add bool) {
	var beta float32
	if add {
		beta = 1
	}
	Sgemm(false, false, rows, hd, n, 1, w, ldw, v, hd, beta, out, ldo)
}
