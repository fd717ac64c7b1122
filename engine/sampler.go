package engine

import (
	"context"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/sample"
)

// Sampler samples from one base model plus one adapter (or none), batching the decoding steps of concurrent
// Sample calls, and the prefills of those that arrive together: n requests in flight read the weights once
// per token (and once per group of prompts) instead of n times. A call decoded
// alone gets exactly what Base.Sample gives for the same seed; in a batch, only the rounding of the matrix
// kernels (which depend on the row count) differs, so logprobs agree to about 1e-6 and a token can differ
// only at a near-tie — the usual "best effort" of a seed under load. It is safe for concurrent use; the
// adapter must not be trained while a Sampler uses it.
//
// Every Sampler of a base shares one batch: requests on different adapters (and on none) decode in the same
// steps, the base's weights read once for all of them and each adapter's low-rank term added to its rows.
type Sampler struct {
	batch *sample.Batcher
	lora  *model.LoRA
}

// NewSampler returns a batching sampler for b plus adapter a (nil = the base model alone).
func (b *Base) NewSampler(a *Adapter) (*Sampler, error) {
	lora, err := b.loraOf(a)
	if err != nil {
		return nil, err
	}
	b.shared.once.Do(func() { b.shared.batch = sample.NewBatcher(b.w, b) })
	return &Sampler{batch: b.shared.batch, lora: lora}, nil
}

// Sample is Base.Sample through the batch: the same parameters, errors and onToken contract (called on the
// calling goroutine, never blocking the other requests).
func (s *Sampler) Sample(ctx context.Context, prompt []int, p SampleParams, onToken func(index int, t SampledToken)) ([]Completion, error) {
	return sampleResult(s.batch.Run(ctx, s.lora, prompt, p, onToken))
}
