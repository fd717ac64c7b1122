package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
)

// LoRAConfig configures an adapter. TargetModules take the short names q, k, v, o, gate, up, down or the
// Hugging Face names q_proj ... down_proj.
type LoRAConfig struct {
	Rank          int
	Alpha         float32
	Dropout       float32
	TargetModules []string
}

// DefaultLoRAConfig is rank 8, alpha 16, no dropout, on all seven projections.
func DefaultLoRAConfig() LoRAConfig {
	return LoRAConfig{Rank: 8, Alpha: 16, TargetModules: []string{"q", "k", "v", "o", "gate", "up", "down"}}
}

// targets resolves module names.
func (c LoRAConfig) targets() ([model.NumModules]bool, error) {
	var t [model.NumModules]bool
	if len(c.TargetModules) == 0 {
		return t, fmt.Errorf("%w: lora target_modules is empty", ErrInvalidInput)
	}
	for _, name := range c.TargetModules {
		found := false
		for m, hf := range model.ModuleNames {
			if name == hf || name+"_proj" == hf {
				t[m], found = true, true
			}
		}
		if !found {
			return t, fmt.Errorf("%w: unknown lora target module %q", ErrInvalidInput, name)
		}
	}
	return t, nil
}

// Adapter is a LoRA adapter for one base model. Training steps modify it in place, so do not sample from
// an adapter while a Trainer is stepping it (sample from a Clone).
type Adapter struct {
	baseName string
	cfg      model.Config
	lora     *model.LoRA
}

// NewAdapter creates an adapter with B = 0 (so it leaves the base model's outputs unchanged) and A drawn
// from seed.
func (b *Base) NewAdapter(cfg LoRAConfig, seed int64) (*Adapter, error) {
	t, err := cfg.targets()
	if err != nil {
		return nil, err
	}
	l, err := model.NewLoRA(b.w.Cfg, cfg.Rank, cfg.Alpha, cfg.Dropout, t, seed)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	return &Adapter{baseName: b.name, cfg: b.w.Cfg, lora: l}, nil
}

// peftConfig is adapter_config.json in PEFT's field names. The fields PEFT, vLLM and other loaders read to
// decide the computation are always written (use_rslora false: the scale is lora_alpha/r; no DoRA, no extra
// trained modules), so none falls back to a loader's default.
type peftConfig struct {
	PeftType       string      `json:"peft_type"`
	TaskType       string      `json:"task_type"`
	R              int         `json:"r"`
	LoraAlpha      float32     `json:"lora_alpha"`
	LoraDropout    float32     `json:"lora_dropout"`
	TargetModules  peftTargets `json:"target_modules"`
	BaseModel      string      `json:"base_model_name_or_path"`
	Bias           string      `json:"bias"`
	FanInFanOut    bool        `json:"fan_in_fan_out"`
	InferenceMode  bool        `json:"inference_mode"`
	InitLoraWeight bool        `json:"init_lora_weights"`
	UseRSLoRA      bool        `json:"use_rslora"`
	UseDoRA        bool        `json:"use_dora"`
	ModulesToSave  []string    `json:"modules_to_save"`
}

// peftTargets is target_modules: a list of module names, or PEFT's shorthand "all-linear" (every projection
// of the decoder layers). Other strings are regular expressions over module paths, which are not supported.
type peftTargets []string

func (p *peftTargets) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s != "all-linear" {
			return fmt.Errorf("target_modules %q: only a list of module names or \"all-linear\" is supported", s)
		}
		*p = model.ModuleNames[:]
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("target_modules: %w", err)
	}
	*p = list
	return nil
}

// check rejects PEFT options that change the computation in ways the engine does not implement.
func (pc peftConfig) check() error {
	switch {
	case pc.PeftType != "" && !strings.EqualFold(pc.PeftType, "LORA"):
		return fmt.Errorf("peft_type %q is not LORA", pc.PeftType)
	case pc.Bias != "" && pc.Bias != "none":
		return fmt.Errorf("bias %q is not supported (none)", pc.Bias)
	case pc.UseRSLoRA:
		return errors.New("use_rslora is not supported")
	case pc.UseDoRA:
		return errors.New("use_dora is not supported")
	case pc.FanInFanOut:
		return errors.New("fan_in_fan_out is not supported")
	case len(pc.ModulesToSave) > 0:
		return fmt.Errorf("modules_to_save %v is not supported", pc.ModulesToSave)
	}
	return nil
}

// Config returns the adapter's LoRA configuration (Hugging Face module names).
func (a *Adapter) Config() LoRAConfig {
	c := LoRAConfig{Rank: a.lora.Rank, Alpha: a.lora.Alpha, Dropout: a.lora.Dropout}
	for m, on := range a.lora.Targets {
		if on {
			c.TargetModules = append(c.TargetModules, model.ModuleNames[m])
		}
	}
	return c
}

// BaseModel is the name of the base model the adapter belongs to.
func (a *Adapter) BaseModel() string { return a.baseName }

// ConfigJSON returns adapter_config.json.
func (a *Adapter) ConfigJSON() ([]byte, error) {
	c := a.Config()
	return json.MarshalIndent(peftConfig{PeftType: "LORA", TaskType: "CAUSAL_LM", R: c.Rank, LoraAlpha: c.Alpha,
		LoraDropout: c.Dropout, TargetModules: c.TargetModules, BaseModel: a.baseName, Bias: "none",
		InferenceMode: true, InitLoraWeight: true}, "", "  ")
}

// WriteWeights writes adapter_model.safetensors (float32, PEFT tensor names, deterministic bytes).
func (a *Adapter) WriteWeights(w io.Writer) error {
	return safetensors.Write(w, model.SafetensorsList(a.lora.Tensors(a.cfg)), map[string]string{"format": "pt"}, "F32")
}

// SizeBytes is the memory the adapter's matrices take.
func (a *Adapter) SizeBytes() int64 {
	var n int64
	for _, t := range a.lora.Tensors(a.cfg) {
		n += int64(len(t.Data)) * 4
	}
	return n
}

// Clone returns an independent copy.
func (a *Adapter) Clone() *Adapter {
	return &Adapter{baseName: a.baseName, cfg: a.cfg, lora: a.lora.Clone()}
}

// LoadAdapter reads an adapter saved by WriteWeights/ConfigJSON (or by PEFT for a compatible base, in F32,
// F16 or BF16). The config's base_model_name_or_path, when set, must name this base.
func (b *Base) LoadAdapter(weights io.Reader, configJSON []byte) (*Adapter, error) {
	var pc peftConfig
	if err := json.Unmarshal(configJSON, &pc); err != nil {
		return nil, fmt.Errorf("%w: adapter_config.json: %v", ErrInvalidInput, err)
	}
	if err := pc.check(); err != nil {
		return nil, fmt.Errorf("%w: adapter_config.json: %v", ErrInvalidInput, err)
	}
	if pc.BaseModel != "" && pc.BaseModel != b.name {
		return nil, fmt.Errorf("%w: adapter is for base %q, not %q", ErrInvalidInput, pc.BaseModel, b.name)
	}
	a, err := b.NewAdapter(LoRAConfig{Rank: pc.R, Alpha: pc.LoraAlpha, Dropout: pc.LoraDropout, TargetModules: pc.TargetModules}, 0)
	if err != nil {
		return nil, err
	}
	f, err := safetensors.Read(weights)
	if err != nil {
		return nil, fmt.Errorf("%w: adapter weights: %v", ErrInvalidInput, err)
	}
	want := a.lora.Tensors(a.cfg)
	text := 0 // the vision tower's adapters of a multimodal Gemma 3 do not touch text
	for name := range f.Tensors {
		if !strings.Contains(name, ".vision_tower.") && !strings.Contains(name, ".multi_modal_projector.") {
			text++
		}
	}
	if text != len(want) {
		return nil, fmt.Errorf("%w: adapter has %d tensors, config implies %d", ErrInvalidInput, text, len(want))
	}
	for _, t := range want {
		src, ok := adapterTensor(f.Tensors, t.Name)
		if !ok || fmt.Sprint(src.Shape) != fmt.Sprint(t.Shape) {
			return nil, fmt.Errorf("%w: adapter tensor %s missing or not shaped %v", ErrInvalidInput, t.Name, t.Shape)
		}
		copy(t.Data, src.Data)
	}
	return a, nil
}

// adapterTensor finds an adapter matrix by its causal LM's PEFT name (base_model.model.model.layers.…), or
// by the names PEFT gives it on Gemma3ForConditionalGeneration, whose text model transformers nests under
// model.language_model (since 4.52) or language_model.model (before).
func adapterTensor(ts map[string]safetensors.Tensor, name string) (safetensors.Tensor, bool) {
	if t, ok := ts[name]; ok {
		return t, true
	}
	rest, ok := strings.CutPrefix(name, "base_model.model.model.")
	if !ok {
		return safetensors.Tensor{}, false
	}
	for _, p := range []string{"base_model.model.model.language_model.", "base_model.model.language_model.model."} {
		if t, ok := ts[p+rest]; ok {
			return t, true
		}
	}
	return safetensors.Tensor{}, false
}

func (a *Adapter) checkBase(b *Base) error {
	if a.baseName != b.name || a.cfg != b.w.Cfg {
		return fmt.Errorf("%w: adapter belongs to base %q, not %q", ErrInvalidInput, a.baseName, b.name)
	}
	return nil
}
