package engine

import (
	"fmt"
	"io"
	"strconv"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
	"github.com/trainyard/trainyard/engine/train"
)

// OptimizerState is the AdamW state of an adapter (moments and step count), saved as optimizer.bin so a
// job resumes exactly where it stopped.
type OptimizerState struct {
	st    *train.AdamState
	names []model.Tensor // the adapter's tensor names and shapes, in parameter order
}

// NewOptimizerState returns a fresh (step 0) state for a.
func NewOptimizerState(a *Adapter) *OptimizerState {
	return &OptimizerState{st: train.NewAdamState(adapterParams(a)), names: a.lora.Tensors(a.cfg)}
}

// Step is the number of optimizer steps taken.
func (o *OptimizerState) Step() int64 { return o.st.Step }

// optimizer.bin is a safetensors file: "<adapter tensor>.exp_avg" and ".exp_avg_sq" (float32) for every
// adapter tensor, and metadata {"format":"trainyard-adamw-v1","step":"N"}.
const optimizerFormat = "trainyard-adamw-v1"

// Write writes optimizer.bin (tensor names follow the adapter the state was created for).
func (o *OptimizerState) Write(w io.Writer) error {
	var ts []safetensors.Tensor
	for i, t := range o.names {
		ts = append(ts, safetensors.Tensor{Name: t.Name + ".exp_avg", Shape: t.Shape, Data: o.st.M[i]},
			safetensors.Tensor{Name: t.Name + ".exp_avg_sq", Shape: t.Shape, Data: o.st.V[i]})
	}
	meta := map[string]string{"format": optimizerFormat, "step": strconv.FormatInt(o.st.Step, 10)}
	return safetensors.Write(w, ts, meta, "F32")
}

// ReadOptimizerState reads optimizer.bin for adapter a.
func ReadOptimizerState(r io.Reader, a *Adapter) (*OptimizerState, error) {
	f, err := safetensors.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%w: optimizer state: %v", ErrInvalidInput, err)
	}
	if f.Metadata["format"] != optimizerFormat {
		return nil, fmt.Errorf("%w: optimizer state format %q", ErrInvalidInput, f.Metadata["format"])
	}
	step, err := strconv.ParseInt(f.Metadata["step"], 10, 64)
	if err != nil || step < 0 {
		return nil, fmt.Errorf("%w: optimizer state step %q", ErrInvalidInput, f.Metadata["step"])
	}
	o := NewOptimizerState(a)
	o.st.Step = step
	for i, t := range a.lora.Tensors(a.cfg) {
		for _, part := range []struct {
			suffix string
			dst    []float32
		}{{".exp_avg", o.st.M[i]}, {".exp_avg_sq", o.st.V[i]}} {
			src, ok := f.Tensors[t.Name+part.suffix]
			if !ok || len(src.Data) != len(part.dst) {
				return nil, fmt.Errorf("%w: optimizer state lacks %s%s", ErrInvalidInput, t.Name, part.suffix)
			}
			copy(part.dst, src.Data)
		}
	}
	return o, nil
}

func adapterParams(a *Adapter) [][]float32 {
	var ps [][]float32
	for _, t := range a.lora.Tensors(a.cfg) {
		ps = append(ps, t.Data)
	}
	return ps
}
