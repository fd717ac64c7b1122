package train

import (
	"math"
	"math/rand"
	"testing"
)

func randomSeqs(rng *rand.Rand, withOld bool) []RLSeq {
	var seqs []RLSeq
	for s := 0; s < 3; s++ {
		n := 2 + rng.Intn(4)
		q := RLSeq{Advantage: rng.NormFloat64()}
		for t := 0; t < n; t++ {
			lp := -0.1 - 2*rng.Float64()
			q.Logp = append(q.Logp, lp)
			q.Ref = append(q.Ref, lp+0.3*rng.NormFloat64())
			old := lp + 0.1*rng.NormFloat64() // ratios near 1: inside the clip range
			if !withOld {
				old = math.NaN()
			}
			q.Old = append(q.Old, old)
		}
		seqs = append(seqs, q)
	}
	return seqs
}

// TestRLLossGradient checks ∂loss/∂logp against central differences. For cispo the importance weight is
// a stop-gradient, so the difference moves logp and old together (ratio fixed) and must match the
// coefficient exactly; for ppo only logp moves.
func TestRLLossGradient(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, cfg := range []RLConfig{
		{LossFn: "ppo"}, {LossFn: "ppo", ImportanceSamplingLevel: "sequence"},
		{LossFn: "ppo", KLPenaltyCoef: 0.3}, {LossFn: "cispo"}, {LossFn: "cispo", KLPenaltyCoef: 0.5},
		{LossFn: "cispo", ImportanceSamplingLevel: "sequence"},
	} {
		seqs := randomSeqs(rng, true)
		norm := 7.0
		res, err := RLLoss(seqs, cfg, norm)
		if err != nil {
			t.Fatal(err)
		}
		for s := range seqs {
			for k := range seqs[s].Logp {
				const h = 1e-6
				eval := func(d float64) float64 {
					seqs[s].Logp[k] += d
					if cfg.LossFn == "cispo" {
						if cfg.ImportanceSamplingLevel == "sequence" {
							for j := range seqs[s].Old {
								seqs[s].Old[j] += d / float64(len(seqs[s].Old))
							}
						} else {
							seqs[s].Old[k] += d
						}
					}
					r, _ := RLLoss(seqs, cfg, norm)
					seqs[s].Logp[k] -= d
					if cfg.LossFn == "cispo" {
						if cfg.ImportanceSamplingLevel == "sequence" {
							for j := range seqs[s].Old {
								seqs[s].Old[j] -= d / float64(len(seqs[s].Old))
							}
						} else {
							seqs[s].Old[k] -= d
						}
					}
					return r.Loss / norm
				}
				num := (eval(h) - eval(-h)) / (2 * h)
				if math.Abs(num-res.Coef[s][k]) > 1e-6+1e-4*math.Abs(num) {
					t.Errorf("%+v seq %d tok %d: coef %.8g numeric %.8g", cfg, s, k, res.Coef[s][k], num)
				}
			}
		}
	}
}

// TestPPOClipping: outside the clip range with the advantage pushing further out, PPO has no gradient;
// CISPO keeps a gradient scaled by the clipped weight.
func TestPPOClipping(t *testing.T) {
	seq := []RLSeq{{Logp: []float64{-1}, Old: []float64{-2}, Advantage: 1}} // ratio e ≈ 2.72
	ppo, _ := RLLoss(seq, RLConfig{LossFn: "ppo", Epsilon: 0.2}, 1)
	if ppo.Coef[0][0] != 0 || ppo.Clipped != 1 {
		t.Fatalf("ppo coef %v clipped %d", ppo.Coef[0][0], ppo.Clipped)
	}
	cispo, _ := RLLoss(seq, RLConfig{LossFn: "cispo", Epsilon: 0.2, EpsilonHigh: 0.5}, 1)
	if math.Abs(cispo.Coef[0][0]-(-1.5)) > 1e-12 {
		t.Fatalf("cispo coef %v, want -1.5 (clipped weight 1.5 × advantage 1)", cispo.Coef[0][0])
	}
	neg := []RLSeq{{Logp: []float64{-1}, Old: []float64{-2}, Advantage: -1}}
	ppoNeg, _ := RLLoss(neg, RLConfig{LossFn: "ppo"}, 1)
	if math.Abs(ppoNeg.Coef[0][0]-math.E) > 1e-9 {
		t.Fatalf("ppo with negative advantage must keep the unclipped gradient, got %v", ppoNeg.Coef[0][0])
	}
}

func TestRLConfigValidation(t *testing.T) {
	for _, c := range []RLConfig{{LossFn: "dpo"}, {ImportanceSamplingLevel: "batch"}, {Epsilon: -1}} {
		if _, err := c.Normalize(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := RLLoss([]RLSeq{{Logp: []float64{math.NaN()}, Advantage: 1}}, RLConfig{}, 1); err == nil {
		t.Error("NaN logprob gave no error")
	}
}

func TestAdvantages(t *testing.T) {
	got := Advantages([][]float64{{1, 0, 0, 1}, {2, 2, 2}, {5}, {3, 1}}, true, 0)
	want := [][]float64{{1, -1, -1, 1}, {0, 0, 0}, {0}, {1, -1}}
	for g := range want {
		for i := range want[g] {
			if math.Abs(got[g][i]-want[g][i]) > 1e-12 {
				t.Fatalf("group %d: %v, want %v", g, got[g], want[g])
			}
		}
	}
	unscaled := Advantages([][]float64{{4, 0}}, false, 0.5)
	if unscaled[0][0] != 3 || unscaled[0][1] != -1 {
		t.Fatalf("balance 0.5: %v, want [3 -1]", unscaled[0])
	}
}

func TestLogprobGrad(t *testing.T) {
	logits := []float32{0.5, -1, 2, 0.1, 0.3, -0.2}
	targets := []int{2, 0}
	coef := []float64{0.7, -1.3}
	g := append([]float32(nil), logits...)
	LogprobGrad(g, 3, targets, coef, Stats(logits, 3, targets).LogSum)
	f := func(l []float32) float64 {
		st := Stats(l, 3, targets)
		return coef[0]*st.Logprob[0] + coef[1]*st.Logprob[1]
	}
	for i := range logits {
		p, m := append([]float32(nil), logits...), append([]float32(nil), logits...)
		p[i] += 1e-2
		m[i] -= 1e-2
		num := (f(p) - f(m)) / 2e-2
		if math.Abs(num-float64(g[i])) > 1e-3 {
			t.Errorf("logit %d: grad %v numeric %v", i, g[i], num)
		}
	}
}

func TestAdamWNonFinite(t *testing.T) {
	p := [][]float32{{1, 2}}
	s := NewAdamState(p)
	if _, err := s.Update(p, [][]float32{{float32(math.NaN()), 0}}, DefaultAdamW()); err == nil || p[0][0] != 1 || s.Step != 0 {
		t.Fatalf("NaN gradient: err %v, params %v, step %d", err, p, s.Step)
	}
	if _, err := s.Update(p, [][]float32{{1, -1}}, DefaultAdamW()); err != nil || p[0][0] >= 1 || p[0][1] <= 2 {
		t.Fatalf("step did not descend: %v %v", err, p)
	}
}

// TestStatsWideRow: over Qwen3's vocabulary with logits far from 0 (a peaked row shifted by 30), Stats'
// log-probabilities, entropies and log-sum-exps stay within 1e-4 of a float64 reference (float32 sums of
// 150,000 exponentials).
func TestStatsWideRow(t *testing.T) {
	const V = 151936
	logits := wideLogits()
	targets := []int{77, 1234}
	st := Stats(logits, V, targets)
	for r, tg := range targets {
		row := logits[r*V : (r+1)*V]
		mx := float64(row[0])
		for _, v := range row {
			mx = math.Max(mx, float64(v))
		}
		var sum, dot float64
		for _, v := range row {
			e := math.Exp(float64(v) - mx)
			sum += e
			dot += e * (float64(v) - mx)
		}
		ls := math.Log(sum)
		logp, ent, lse := float64(row[tg])-mx-ls, ls-dot/sum, mx+ls
		if math.Abs(st.Logprob[r]-logp) > 1e-4 || math.Abs(st.Entropy[r]-ent) > 1e-4 || math.Abs(float64(st.LogSum[r])-lse) > 1e-4 {
			t.Errorf("row %d: logp %v entropy %v logsum %v, want %v %v %v", r, st.Logprob[r], st.Entropy[r], st.LogSum[r], logp, ent, lse)
		}
	}
}

// wideLogits is two rows over Qwen3's vocabulary, shifted by 30, row 0 peaked on id 77.
func wideLogits() []float32 {
	const V = 151936
	rng := rand.New(rand.NewSource(5))
	logits := make([]float32, 2*V)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64()*3) + 30
	}
	logits[77] += 25
	return logits
}
