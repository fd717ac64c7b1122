package model

import "github.com/trainyard/trainyard/engine/linalg"

// TrainPassBytes is the arena memory of a training pass (Forward with Keep, then Backward) over sequences of
// the given lengths with a LoRA adapter of rank on targets (dropout: its masks are kept too). It mirrors the
// buffers forward.go, backward.go and head.go take from the arena; TestTrainPassBytes holds it to the
// arena's count.
func TrainPassBytes(c Config, rank int, targets [NumModules]bool, dropout bool, lens []int) int64 {
	var n int64
	for _, T := range lens {
		n += TrainSeqBytes(c, rank, targets, dropout, T, 0)
	}
	return n
}

// trainTokenBytes is a training pass's arena memory per token, attention weights aside.
func trainTokenBytes(c Config, rank int, targets [NumModules]bool, dropout bool) int64 {
	D, QD, KVD, H, L := int64(c.Dim), int64(c.QDim()), int64(c.KVDim()), int64(c.Hidden), int64(c.Layers)
	var lu, drop int64
	for m, on := range targets {
		if on {
			lu += int64(rank)
			if dropout {
				_, in := c.Shape(m)
				drop += 2 * int64(in)
			}
		}
	}
	// Per token: the embedding; per layer the kept activations (two residual copies, q, k, v, att, gate,
	// up, two norm scales, the LoRA bottlenecks and dropout masks) and, in Backward, the LoRA bottleneck
	// gradients; the buffer all layers' h1, h2 and act take turns in (Pass.hbuf); the final norm (scale,
	// output), the hidden-state and residual gradients and the backward scratch shared by all layers (the
	// gate's and up's gradients take their outputs' place).
	perToken := D + L*(2*D+2*QD+2*KVD+2*H+2+2*lu+drop) + max(D, H) + 1 + D + 2*D + H + D + 2*QD + 2*KVD
	if c.QKNorm { // per layer the queries and keys before their norms and the norms' scales; their gradients
		perToken += L*(QD+KVD+int64(c.Heads+c.KVHeads)) + QD + KVD
	}
	if c.SandwichNorm { // per layer the sublayers' outputs before their norms and the scales; their gradient
		perToken += L*(2*D+2) + D
	}
	return 4 * perToken
}

// TrainSeqBytes is one sequence's share of TrainPassBytes: T tokens after a shared prefix of P tokens
// (PassOptions.Prefix; 0: none), whose attention weights are T × (P + T) per head and layer.
func TrainSeqBytes(c Config, rank int, targets [NumModules]bool, dropout bool, T, P int) int64 {
	return int64(T)*trainTokenBytes(c, rank, targets, dropout) + 4*int64(c.Layers)*int64(c.Heads)*int64(T)*int64(P+T)
}

// InferPassBytes is the arena memory of a forward pass without kept activations (one layer's buffers
// reused by every layer) over n tokens, with a LoRA adapter of rank on nTargets projections (0: none).
func InferPassBytes(c Config, rank, nTargets, n int) int64 {
	D, QD, KVD, H := int64(c.Dim), int64(c.QDim()), int64(c.KVDim()), int64(c.Hidden)
	perToken := D + (2*D + 2*QD + 2*KVD + 3*H + 2 + int64(rank*nTargets)) + 1 + D
	if c.QKNorm {
		perToken += QD + KVD + int64(c.Heads+c.KVHeads)
	}
	if c.SandwichNorm {
		perToken += 2*D + 2
	}
	return 4 * int64(n) * perToken
}

// RoundedRowsBytes is what a pass over n tokens holds beside its arena for the rows its norms and gated
// activation round to bfloat16 ahead of the products (Pass.rounded): at most n rows of the wider of dim and
// hidden (counted whether or not this CPU's products take them).
func RoundedRowsBytes(c Config, n int) int64 {
	return 2 * int64(linalg.RoundedLen(n, max(c.Dim, c.Hidden)))
}

// RopeBytes is the memory of the rotary tables weights of config c hold besides their parameters (cos and
// sin of every position and frequency; a second table for local layers): Config.WeightBytes + RopeBytes is
// what loading a base takes.
func RopeBytes(c Config) int64 {
	n := 4 * int64(c.MaxSeqLen) * int64(c.HeadDim)
	if c.SlidingPattern > 0 {
		n *= 2
	}
	return n
}

// MemoryBytes is the memory of the weights (their packed layout included) and the rotary table.
func (w *Weights) MemoryBytes() int64 { return w.Bytes() + w.PackedBytes() + RopeBytes(w.Cfg) }
