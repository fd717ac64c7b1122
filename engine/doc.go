// Package engine is trainyard's training engine facade: a frozen base language model with its tokenizer
// and chat template (Base), LoRA adapters in PEFT layout (Adapter), AdamW state (OptimizerState), SFT and
// RL training steps (Trainer) and sampling with logprobs (Base.Sample).
//
// Everything runs in pure Go on the CPU (matrix products in engine/linalg). The engine imports nothing else
// of the project. Sub-packages: tokenizer, chat (template), model (Llama, Qwen2 and Qwen3 forward/backward,
// LoRA, KV cache; float32 or bfloat16 base matrices), train (losses, AdamW), sample (decoding), safetensors,
// zoo (built-in weights), pretrain (the recipe of the built-in model), torchref (PyTorch parity). See
// DESIGN.md for formulas and measurements.
package engine

import (
	"errors"

	"github.com/trainyard/trainyard/engine/sample"
	"github.com/trainyard/trainyard/engine/train"
)

// ErrInvalidInput wraps every rejection of caller input: token ids out of range, sequences longer than the
// context, no trainable tokens, malformed adapters or checkpoints, bad configuration values.
var ErrInvalidInput = errors.New("engine: invalid input")

// ErrNonFinite reports a NaN or infinite loss or gradient; the step was not applied. Retrying the same
// step gives the same result, so callers should fail the job.
var ErrNonFinite = train.ErrNonFinite

// ErrContextOverflow reports that prompt tokens plus max tokens exceed the model's context length.
var ErrContextOverflow = sample.ErrContextOverflow
