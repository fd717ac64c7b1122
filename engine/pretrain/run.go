// Package pretrain pretrains the built-in base model trainyard/tiny-chat from scratch: a deterministic
// generator mixes synthetic chat tasks (arithmetic, instruction following, tool calls, small talk) with
// fortunes from Debian's fortunes packages, and full-parameter AdamW with a warmup + cosine schedule trains
// a small Llama on it. Same Options → same weights (the data, initialisation and kernels are deterministic).
package pretrain

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/trainyard/trainyard/engine/chat"
	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
	"github.com/trainyard/trainyard/engine/tokenizer"
	"github.com/trainyard/trainyard/engine/train"
)

// Options configure a pretraining run. Zero fields take the defaults of DefaultOptions.
type Options struct {
	OutDir      string       // where model.safetensors and config.json go
	Config      model.Config // architecture (ignored with InitFrom)
	Stages      []Stage      // run in order; weights carry over, each stage starts a fresh optimizer
	BatchTokens int          // tokens per optimizer step
	MaxSeqLen   int          // examples are cut to this many tokens
	SaveEvery   int          // also write the weights every this many steps (0 = only after each stage)
	FortuneDir  string       // Debian's fortunes (apt-get install fortunes fortunes-min)
	InitFrom    string       // start from the weights in this directory instead of a random init
	Log         io.Writer
}

// Stage is one phase of the schedule: linear warmup to PeakLR, cosine decay to PeakLR/10 over Steps, on
// data drawn from Seed (stage 0's Seed also seeds the initialisation).
type Stage struct {
	Steps, WarmupSteps int
	PeakLR             float32
	Seed               int64
	Mix                Mix // data mixture; zero = DefaultMix
}

// TinyChatConfig is the architecture of trainyard/tiny-chat.
func TinyChatConfig() model.Config {
	return model.Config{VocabSize: tokenizer.VocabSize, Dim: 256, Layers: 4, Heads: 4, KVHeads: 4, HeadDim: 64,
		Hidden: 704, MaxSeqLen: 1024, RopeTheta: 10000, NormEps: 1e-5, TiedEmbeddings: true}
}

// DefaultOptions is the recipe of the committed tiny-chat weights.
func DefaultOptions() Options {
	return Options{OutDir: "engine/zoo/tinychat", Config: TinyChatConfig(), BatchTokens: 4096, MaxSeqLen: 384,
		Stages: []Stage{{Steps: 500, WarmupSteps: 30, PeakLR: 2e-3, Seed: 1}, {Steps: 250, WarmupSteps: 20, PeakLR: 1e-3, Seed: 2, Mix: Mix{12, 26, 14, 10, 6, 4, 4, 24}},
			{Steps: 350, WarmupSteps: 20, PeakLR: 1e-3, Seed: 3, Mix: Mix{0, 20, 30, 12, 4, 3, 3, 28}},
			{Steps: 400, WarmupSteps: 20, PeakLR: 1e-3, Seed: 4, Mix: Mix{0, 15, 15, 10, 0, 2, 3, 55}}},
		SaveEvery: 50, FortuneDir: "/usr/share/games/fortunes", Log: os.Stderr}
}

func (o *Options) fill() {
	d := DefaultOptions()
	if o.OutDir == "" {
		o.OutDir = d.OutDir
	}
	if o.Config.VocabSize == 0 {
		o.Config = d.Config
	}
	if len(o.Stages) == 0 {
		o.Stages = d.Stages
	}
	if o.BatchTokens == 0 {
		o.BatchTokens = d.BatchTokens
	}
	if o.MaxSeqLen == 0 {
		o.MaxSeqLen = d.MaxSeqLen
	}
	if o.FortuneDir == "" {
		o.FortuneDir = d.FortuneDir
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// lr is linear warmup to the peak, then cosine decay to a tenth of it.
func (s Stage) lr(step int) float32 {
	if step < s.WarmupSteps {
		return s.PeakLR * float32(step+1) / float32(s.WarmupSteps)
	}
	frac := float64(step-s.WarmupSteps) / float64(max(1, s.Steps-s.WarmupSteps))
	return s.PeakLR * float32(0.1+0.9*0.5*(1+math.Cos(math.Pi*frac)))
}

// Run pretrains (or, with InitFrom, continues pretraining) and writes OutDir/model.safetensors and
// OutDir/config.json after every stage.
func Run(ctx context.Context, o Options) error {
	o.fill()
	tok := tokenizer.New()
	fortunes := loadFortunes(o.FortuneDir, 200)
	if len(fortunes) == 0 {
		fortunes = fallbackFortunes
	}
	w, err := o.initialWeights()
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "pretrain: %d fortunes from %s, %d parameters, stages %+v, %d tokens per step\n",
		len(fortunes), o.FortuneDir, w.Cfg.NumParams(), o.Stages, o.BatchTokens)
	grads := w.Clone()
	params, gradList := tensorData(w), tensorData(grads)
	arena := &model.Arena{}
	start := time.Now()
	for si, st := range o.Stages {
		gen := &generator{r: newRand(st.Seed), tok: tok, tmpl: chat.NewTemplate(tok), fortunes: fortunes, maxLen: o.MaxSeqLen, mix: st.Mix}
		opt := train.NewAdamState(params)
		for step := 0; step < st.Steps; step++ {
			batch := gen.batch(o.BatchTokens)
			for _, g := range gradList {
				clear(g)
			}
			loss, err := lmStep(ctx, w, grads, arena, batch)
			if err != nil {
				return fmt.Errorf("stage %d step %d: %w", si, step, err)
			}
			cfg := train.AdamW{LearningRate: st.lr(step), Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.01, MaxGradNorm: 1}
			norm, err := opt.Update(params, gradList, cfg)
			if err != nil {
				return fmt.Errorf("stage %d step %d: %w", si, step, err)
			}
			if step%10 == 0 || step == st.Steps-1 {
				fmt.Fprintf(o.Log, "stage %d step %d loss %.4f grad_norm %.3f lr %.2e elapsed %s\n", si, step, loss, norm,
					cfg.LearningRate, time.Since(start).Round(time.Second))
			}
			if o.SaveEvery > 0 && (step+1)%o.SaveEvery == 0 {
				if err := Save(o.OutDir, w); err != nil {
					return err
				}
			}
		}
		if err := Save(o.OutDir, w); err != nil {
			return err
		}
	}
	return nil
}

// initialWeights loads InitFrom or initialises randomly from the first stage's seed.
func (o *Options) initialWeights() (*model.Weights, error) {
	if o.InitFrom == "" {
		w, err := model.NewWeights(o.Config)
		if err != nil {
			return nil, err
		}
		w.Init(o.Stages[0].Seed)
		return w, nil
	}
	cfgJSON, err := os.ReadFile(filepath.Join(o.InitFrom, "config.json"))
	if err != nil {
		return nil, err
	}
	cfg, err := model.ParseHFConfig(cfgJSON)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(o.InitFrom, "model.safetensors"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := safetensors.Read(f)
	if err != nil {
		return nil, err
	}
	return model.LoadWeights(cfg, st.Tensors, model.F32) // trained in full: float32
}

// lmStep adds the gradient of the weighted next-token cross-entropy of batch to grads and returns the loss.
func lmStep(ctx context.Context, w, grads *model.Weights, arena *model.Arena, batch []example) (float64, error) {
	arena.Reset()
	seqs := make([][]int, len(batch))
	for i, ex := range batch {
		seqs[i] = ex.tokens
	}
	p, err := w.Forward(ctx, seqs, model.PassOptions{Keep: true, Arena: arena})
	if err != nil {
		return 0, err
	}
	var rows, targets []int
	var coef []float64
	var total float64
	for s, ex := range batch {
		for i := 1; i < len(ex.tokens); i++ {
			rows = append(rows, p.Offsets()[s]+i-1)
			targets = append(targets, ex.tokens[i])
			coef = append(coef, float64(ex.weights[i]))
			total += float64(ex.weights[i])
		}
	}
	logits := p.Logits(rows)
	st := train.Stats(logits, w.Cfg.VocabSize, targets)
	var loss float64
	for i := range coef {
		coef[i] /= total
		loss -= coef[i] * st.Logprob[i]
		coef[i] = -coef[i] // d(−Σ c·logp)/dlogp
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, train.ErrNonFinite
	}
	train.LogprobGrad(logits, w.Cfg.VocabSize, targets, coef, st.LogSum)
	return loss, p.Backward(ctx, rows, logits, model.Grads{W: grads})
}

func tensorData(w *model.Weights) [][]float32 {
	var out [][]float32
	for _, t := range w.Tensors() {
		out = append(out, t.Data)
	}
	return out
}

// Save writes dir/model.safetensors (float32) and dir/config.json.
func Save(dir string, w *model.Weights) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfgJSON, err := w.Cfg.HFConfigJSON()
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors.tmp"))
	if err != nil {
		return err
	}
	err = safetensors.Write(f, model.SafetensorsList(w.Tensors()), map[string]string{"format": "pt"}, "F32")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write weights: %w", err)
	}
	if err := os.Rename(filepath.Join(dir, "model.safetensors.tmp"), filepath.Join(dir, "model.safetensors")); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), cfgJSON, 0o644)
}
