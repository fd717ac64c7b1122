package roofline

import (
	"math"
	"time"

	"github.com/trainyard/trainyard/engine/model"
)

// Cost is the useful work of a measured piece of work: the FLOPs of its matrix products (attention's
// included) and the bytes it must read from memory at least once. Work a system does beyond it —
// recomputing activations, attending to masked positions, padding — is not counted, so that two systems
// doing the same work are credited the same FLOPs whatever their method.
type Cost struct {
	FLOPs, Bytes float64
	// BaseFLOPs is the part of FLOPs in products with the frozen base's weights (the projections and the
	// output head): what runs on AMX tiles where the CPU has them (MixedBound).
	BaseFLOPs float64
}

// Bound is the shortest time c can take on m with peak FLOP/s: reading its bytes once at full bandwidth,
// or its FLOPs at peak, whichever is longer.
func (m Machine) Bound(c Cost, peak float64) time.Duration {
	return m.MixedBound(c, peak, peak)
}

// MixedBound is Bound with c's products with the base at basePeak and the rest (attention, adapters) at
// peak: a step whose base products run on AMX tiles and everything else on float32 FMAs.
func (m Machine) MixedBound(c Cost, basePeak, peak float64) time.Duration {
	s := math.Max(c.Bytes/m.Bandwidth, c.ComputeSeconds(basePeak, peak))
	return time.Duration(s * float64(time.Second))
}

// ComputeSeconds is how long c's FLOPs take at the peaks: the base's at basePeak, the rest at peak.
func (c Cost) ComputeSeconds(basePeak, peak float64) float64 {
	return c.BaseFLOPs/basePeak + (c.FLOPs-c.BaseFLOPs)/peak
}

// projParams is the parameters of the seven projections of one layer, and loraParams the parameters of
// rank-r adapters on all seven (r · (in + out) each).
func projParams(cfg model.Config, rank int) (proj, lora int) {
	for m := 0; m < model.NumModules; m++ {
		o, i := cfg.Shape(m)
		proj += o * i
		lora += rank * (o + i)
	}
	return proj, lora
}

// headParams is the output head's (the embedding's, when tied).
func headParams(cfg model.Config) int { return cfg.VocabSize * cfg.Dim }

// TrainStep is one LoRA training step (RL or SFT) of seqs sequences of T tokens whose last trainable tokens
// get loss, with rank-rank adapters on all seven projections of every layer.
//
// A full fine-tuning step costs ~6·N FLOPs a token for N parameters: 2·N forward, 2·N for the gradient
// of the activations and 2·N for the gradient of the weights. LoRA freezes the base, so its weights'
// gradients are never formed: the base costs 4·N_base a token. The adapters are trained, so they cost the
// full 6·N_lora. The output head runs only on the rows that predict a trainable token (its logits are
// needed nowhere else) and, frozen, costs 4·V·d per such row. Causal attention over T positions costs
// 2·heads·head_dim·T² a layer and sequence forward (scores and weighted values over the T²/2 visible
// pairs, 2 FLOPs a multiply-add) and twice that backward: 6·heads·head_dim·T² in all. So
//
//	FLOPs = seqs·T·L·(4·N_proj + 6·N_lora) + seqs·trainable·4·V·d + seqs·L·6·H·hd·T²
//
// with N_proj and N_lora a layer's projection and adapter parameters. Norms, RoPE, activations, softmax,
// cross-entropy and the optimizer are linear in T and left out (well under 1% here). Bytes are the
// bfloat16 base read once (the step is far from bandwidth-bound).
func TrainStep(cfg model.Config, seqs, T, trainable, rank int) Cost {
	proj, lora := projParams(cfg, rank)
	n, t, tr, L := float64(seqs), float64(T), float64(min(trainable, T)), float64(cfg.Layers)
	attn := float64(cfg.Heads * cfg.HeadDim)
	base := n*t*L*4*float64(proj) + n*tr*4*float64(headParams(cfg))
	flops := base + n*t*L*6*float64(lora) + n*L*6*attn*t*t
	return Cost{FLOPs: flops, BaseFLOPs: base, Bytes: 2 * (L*float64(proj) + float64(headParams(cfg)))}
}

// Prefill is one sequence's prompt of P tokens through the model, its last position's logits only:
// 2·N_proj a token and layer, causal attention 2·H·hd·P² a layer, the head 2·V·d once. Bytes: the
// weights at weightBytes each (2 for bfloat16, 4 for float32) and the keys and values written (float32).
func Prefill(cfg model.Config, P int, weightBytes float64) Cost {
	proj, _ := projParams(cfg, 0)
	p, L := float64(P), float64(cfg.Layers)
	base := p*L*2*float64(proj) + 2*float64(headParams(cfg))
	flops := base + L*2*float64(cfg.Heads*cfg.HeadDim)*p*p
	return Cost{FLOPs: flops, BaseFLOPs: base, Bytes: weightBytes*(L*float64(proj)+float64(headParams(cfg))) + kvBytes(cfg, P)}
}

// Decode is steps decoding steps of batch sequences whose context holds start positions before the first:
// each step 2·(L·N_proj + V·d) FLOPs a row plus attention over its context (4·H·hd a position and layer:
// scores and weighted values), and reads every weight once (weightBytes each) whatever the batch, plus each
// row's keys and values (float32).
func Decode(cfg model.Config, batch, start, steps int, weightBytes float64) Cost {
	proj, _ := projParams(cfg, 0)
	L, b := float64(cfg.Layers), float64(batch)
	weights := L*float64(proj) + float64(headParams(cfg))
	var c Cost
	for s := range steps {
		ctx := start + s + 1 // the new position attends to itself too
		c.FLOPs += b * (2*weights + L*4*float64(cfg.Heads*cfg.HeadDim*ctx))
		c.BaseFLOPs += b * 2 * weights
		c.Bytes += weightBytes*weights + b*kvBytes(cfg, ctx)
	}
	return c
}

// DecodeStepWeights is the part of one decoding step of rows sequences that does not depend on their
// context: the bfloat16 weights read once and 2 FLOPs per weight and row (attention left out).
func DecodeStepWeights(cfg model.Config, rows int) Cost {
	proj, _ := projParams(cfg, 0)
	w := float64(cfg.Layers*proj + headParams(cfg))
	return Cost{FLOPs: 2 * w * float64(rows), BaseFLOPs: 2 * w * float64(rows), Bytes: 2 * w}
}

// kvBytes is the float32 keys and values of ctx positions over every layer.
func kvBytes(cfg model.Config, ctx int) float64 {
	return float64(cfg.Layers) * 2 * float64(cfg.KVHeads*cfg.HeadDim) * float64(ctx) * 4
}
