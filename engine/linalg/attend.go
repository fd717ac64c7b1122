package linalg

import "fmt"

// AttendScores sets s[t] = scale·(q·k_t) for t < n, where k_t = k[t·hd:(t+1)·hd] and q has hd values: one
// query row's scores against n cached keys of its head (a decoding step's attention).
func AttendScores(q, k []float32, hd, n int, scale float32, s []float32) {
	if len(q) < hd || len(k) < n*hd || len(s) < n {
		panic(fmt.Sprintf("linalg.AttendScores: q %d, k %d, s %d values for hd %d and %d keys", len(q), len(k), len(s), hd, n))
	}
	if n == 0 {
		return
	}
	attScores(q[:hd], k[:n*hd], hd, n, scale, s[:n])
}

// AttendWeigh sets out[:hd] to Σ_{t<n} w[t]·v_t, where v_t = v[t·hd:(t+1)·hd], or adds that sum to out when
// add is set: one query row's attention output over n cached values of its head, given its weights.
func AttendWeigh(w, v []float32, hd, n int, out []float32, add bool) {
	if len(w) < n || len(v) < n*hd || len(out) < hd {
		panic(fmt.Sprintf("linalg.AttendWeigh: w %d, v %d, out %d values for hd %d and %d rows", len(w), len(v), len(out), hd, n))
	}
	if n == 0 {
		if !add {
			clear(out[:hd])
		}
		return
	}
	attWeigh(w[:n], v[:n*hd], hd, n, out[:hd], add)
}

// attendScoresGeneric is the portable AttendScores.
func attendScoresGeneric(q, k []float32, hd, n int, scale float32, s []float32) {
	for t := range n {
		s[t] = scale * dot(q, k[t*hd:(t+1)*hd])
	}
}

// attendWeighGeneric is the portable AttendWeigh.
func attendWeighGeneric(w, v []float32, hd, n int, out []float32, add bool) {
	if !add {
		clear(out)
	}
	for t := range n {
		axpy(w[t], v[t*hd:(t+1)*hd], out)
	}
}
