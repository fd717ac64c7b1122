package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"time"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
)

// Data-parallel steps. A step's batch is split into shards (Shards), each shard's gradient is computed by
// its own trainer, possibly in another process (SFTGradient, RLGradient), and the gradients are summed in
// shard order and applied once (ApplyGradients). Each shard weights its tokens by 1/N, N being the
// trainable tokens of the whole step (SFTTokens, RLTokens), so the shards' gradients add up to the whole
// batch's: the result is SFTStep's or RLStep's up to the order of float summation. Every trainer of a step
// must hold the same adapter and optimizer step.

// GradientSums are the sums a shard's statistics contribute to its step's: ApplyGradients adds them up and
// divides by the step's N.
type GradientSums struct {
	Loss, PolicyLoss, KL, Ratio, Entropy float64 // sums over the shard's trainable tokens
	Clipped                              int
	Tokens, Trainable                    int // tokens and trainable tokens of the sequences trained on
	Sequences, Trained                   int // sequences given, and those with signal (RL)
	Flops                                int64
	Seconds                              float64 // the shard's compute time
}

// add accumulates o into s; Seconds is the longest, shards running side by side.
func (s *GradientSums) add(o GradientSums) {
	s.Loss, s.PolicyLoss, s.KL, s.Ratio, s.Entropy = s.Loss+o.Loss, s.PolicyLoss+o.PolicyLoss, s.KL+o.KL, s.Ratio+o.Ratio, s.Entropy+o.Entropy
	s.Clipped += o.Clipped
	s.Tokens, s.Trainable, s.Sequences, s.Trained = s.Tokens+o.Tokens, s.Trainable+o.Trainable, s.Sequences+o.Sequences, s.Trained+o.Trained
	s.Flops += o.Flops
	s.Seconds = max(s.Seconds, o.Seconds)
}

// Gradient is one shard's contribution to a step: the adapter's gradient over its sequences and the sums
// of its statistics. A shard without trainable tokens has no gradient tensors (Empty).
type Gradient struct {
	Sums GradientSums
	lora *model.LoRA
	cfg  model.Config
}

// Empty reports whether the shard contributed no gradient.
func (g *Gradient) Empty() bool { return g.lora == nil }

// Shards splits a batch whose items weigh weights (their token counts, say) into at most k contiguous
// runs of about equal weight, in order; runs are never empty, so fewer than k come back when the batch
// has fewer items. Item order is kept, so a step's shards, summed in order, visit the batch in order.
// Run j ends at the item boundary nearest to (j+1)/k of the total weight.
func Shards(weights []int, k int) [][]int {
	k = max(1, min(k, len(weights)))
	total := 0
	for _, w := range weights {
		total += max(w, 0)
	}
	out := make([][]int, 0, k)
	start, acc := 0, 0
	for i, w := range weights {
		acc += max(w, 0)
		if len(out) == k-1 {
			continue // the last run takes the rest
		}
		left := len(weights) - i - 1 // items after i
		need := k - len(out) - 1     // runs still to open after this one
		target := float64(total) * float64(len(out)+1) / float64(k)
		// End the run after item i when that is nearer its target than ending it after the next item
		// would be, or when each remaining run needs one of the remaining items.
		next := float64(acc)
		if i+1 < len(weights) {
			next += float64(max(weights[i+1], 0))
		}
		if left == need || (left > need && math.Abs(float64(acc)-target) <= math.Abs(next-target)) {
			out = append(out, seq(start, i+1))
			start = i + 1
		}
	}
	if start < len(weights) {
		out = append(out, seq(start, len(weights)))
	}
	return out
}

// seq is lo, lo+1, …, hi−1.
func seq(lo, hi int) []int {
	s := make([]int, hi-lo)
	for i := range s {
		s[i] = lo + i
	}
	return s
}

// SFTTokens validates a step's whole SFT batch and returns its N, the trainable tokens its shards'
// gradients are normalised by.
func (t *Trainer) SFTTokens(seqs []Sequence) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sftTokens(seqs)
}

// RLTokens validates a step's whole RL batch and returns its N (0: the step has no signal and is skipped).
func (t *Trainer) RLTokens(batch []RLSample, cfg RLConfig) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rlTokens(batch, cfg)
}

// SFTGradient computes shard number shard of an SFT step whose whole batch has n trainable tokens. The
// gradient is the trainer's buffer: valid until its next step or gradient.
func (t *Trainer) SFTGradient(ctx context.Context, seqs []Sequence, n, shard int) (*Gradient, error) {
	return t.gradient(func() (GradientSums, error) { return t.sftGrads(ctx, seqs, n, shard) })
}

// RLGradient computes shard number shard of an RL step whose whole batch has n trainable tokens with
// signal, as RLGradient does for SFT.
func (t *Trainer) RLGradient(ctx context.Context, batch []RLSample, cfg RLConfig, n, shard int) (*Gradient, error) {
	return t.gradient(func() (GradientSums, error) { return t.rlGrads(ctx, batch, cfg, n, shard) })
}

func (t *Trainer) gradient(grads func() (GradientSums, error)) (*Gradient, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	t.zeroGrads()
	sums, err := grads()
	if err != nil {
		return nil, err
	}
	sums.Seconds = time.Since(start).Seconds()
	g := &Gradient{Sums: sums, cfg: t.adapter.cfg}
	if sums.Trainable > 0 {
		g.lora = t.grads
	}
	return g, nil
}

// ApplyGradients takes a step's optimizer update from its shards' gradients, summed in the order given
// (a fixed order makes the result reproducible), n being the step's N. rl selects RL's statistics (and
// its skipped step when n is 0). The step's rates count the slowest shard's time plus this update's.
func (t *Trainer) ApplyGradients(rl bool, gs []*Gradient, n int, opt AdamWConfig) (StepStats, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	t.zeroGrads()
	var sums GradientSums
	dst := adapterParamsOf(t.grads, t.adapter.cfg)
	for i, g := range gs {
		sums.add(g.Sums)
		if g.Empty() {
			continue
		}
		if g.lora == t.grads {
			return nil, fmt.Errorf("%w: shard %d's gradient is this trainer's own buffer; read it back (ReadGradient) or compute it on another trainer", ErrInvalidInput, i)
		}
		src := adapterParamsOf(g.lora, g.cfg)
		if len(src) != len(dst) {
			return nil, fmt.Errorf("%w: shard %d's gradient has %d tensors, the adapter %d", ErrInvalidInput, i, len(src), len(dst))
		}
		for j := range dst {
			if len(src[j]) != len(dst[j]) {
				return nil, fmt.Errorf("%w: shard %d's gradient tensor %d has %d values, the adapter's %d", ErrInvalidInput, i, j, len(src[j]), len(dst[j]))
			}
			d := dst[j]
			for k, v := range src[j] {
				d[k] += v
			}
		}
	}
	if sums.Trainable != n {
		return nil, fmt.Errorf("%w: the shards trained %d tokens, the step has %d", ErrInvalidInput, sums.Trainable, n)
	}
	return t.apply(rl, sums, n, opt, time.Duration(sums.Seconds*float64(time.Second))+time.Since(start))
}

// gradientFormat marks a gradient file: a safetensors file of the adapter's tensor names (float32).
const gradientFormat = "trainyard-lora-grad-v1"

// Write writes the gradient's tensors (not its sums, which travel with the shard's result). An empty
// gradient writes a file without tensors.
func (g *Gradient) Write(w io.Writer) error {
	var ts []safetensors.Tensor
	if g.lora != nil {
		for _, t := range g.lora.Tensors(g.cfg) {
			ts = append(ts, safetensors.Tensor{Name: t.Name, Shape: t.Shape, Data: t.Data})
		}
	}
	return safetensors.Write(w, ts, map[string]string{"format": gradientFormat}, "F32")
}

// ReadGradient reads a gradient written by Gradient.Write for this trainer's adapter, with its sums.
func (t *Trainer) ReadGradient(r io.Reader, sums GradientSums) (*Gradient, error) {
	f, err := safetensors.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%w: gradient: %v", ErrInvalidInput, err)
	}
	if f.Metadata["format"] != gradientFormat {
		return nil, fmt.Errorf("%w: gradient format %q", ErrInvalidInput, f.Metadata["format"])
	}
	g := &Gradient{Sums: sums, cfg: t.adapter.cfg}
	if len(f.Tensors) == 0 {
		if sums.Trainable > 0 {
			return nil, fmt.Errorf("%w: gradient of %d trainable tokens has no tensors", ErrInvalidInput, sums.Trainable)
		}
		return g, nil
	}
	g.lora = t.adapter.lora.ZeroLike()
	for _, dst := range g.lora.Tensors(g.cfg) {
		src, ok := f.Tensors[dst.Name]
		if !ok || len(src.Data) != len(dst.Data) {
			return nil, fmt.Errorf("%w: gradient lacks %s", ErrInvalidInput, dst.Name)
		}
		copy(dst.Data, src.Data)
	}
	return g, nil
}

// Checksum is a CRC-32C of the adapter's weights (their float32 bits, in tensor order): workers that keep
// replicas of a job's adapter compare it with the one that applied a step to know theirs is the same.
func (a *Adapter) Checksum() uint32 {
	var sum uint32
	var buf []byte
	for _, p := range adapterParams(a) {
		buf = buf[:0]
		for _, v := range p {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		sum = crc32.Update(sum, castagnoli, buf)
	}
	return sum
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
