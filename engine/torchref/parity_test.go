package torchref

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainyard/trainyard/engine/linalg"
	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
)

// tolerance bounds the relative error max|engine − torch| / max|torch| of every compared tensor (logits, each
// LoRA gradient matrix), for the float32 base and for the bfloat16 base against PyTorch computing with the
// same bfloat16-rounded weights in float32: the engine widens bfloat16 to float32 before every product, so
// both cases differ from PyTorch only by float32 summation order. Measured worst cases (go test -v):
// about 1e-6 for logits and 1e-5 for gradients. Training's bfloat16 products (AMX) are off here, as
// TRAINYARD_TRAIN_BF16=false turns them off: they round the activations too, which PyTorch's float32
// reference does not (engine/model's TestBF16TrainProducts states what they change).
const tolerance = 1e-4

func TestMain(m *testing.M) {
	linalg.SetBF16Train(false)
	os.Exit(m.Run())
}

type fixtureCase struct {
	Seqs     [][]int `json:"seqs"`
	Loss     float64 `json:"loss"`
	BF16Loss float64 `json:"bf16_loss"`
}

func TestTorchParity(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/config.json")
	if err != nil || len(dirs) < 6 {
		t.Fatalf("fixtures: %v %v (run make torch-fixtures)", dirs, err)
	}
	for _, cfgPath := range dirs {
		dir := filepath.Dir(cfgPath)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var fc fixtureCase
			readJSON(t, filepath.Join(dir, "case.json"), &fc)
			cfgJSON, err := os.ReadFile(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := model.ParseHFConfig(cfgJSON)
			if err != nil {
				t.Fatal(err)
			}
			base := readSafetensors(t, filepath.Join(dir, "model.safetensors"))
			want := readSafetensors(t, filepath.Join(dir, "expected.safetensors"))
			lora := readAdapter(t, dir, cfg)
			for _, dtype := range []model.DType{model.F32, model.BF16} {
				prefix, wantLoss := "", fc.Loss
				if dtype == model.BF16 {
					prefix, wantLoss = "bf16.", fc.BF16Loss
				}
				w, err := model.LoadWeights(cfg, base, dtype)
				if err != nil {
					t.Fatal(err)
				}
				logits, loss, grads := run(t, w, lora, fc.Seqs)
				if d := math.Abs(loss-wantLoss) / wantLoss; d > tolerance {
					t.Errorf("%s: loss %v, torch %v", dtype, loss, wantLoss)
				}
				worstGrad, worstGradAbs := 0.0, 0.0
				e := relErr(logits, want[prefix+"logits"].Data)
				for _, g := range grads.Tensors(cfg) {
					ref, ok := want[prefix+"grad."+g.Name]
					if !ok {
						t.Fatalf("no reference gradient for %s", g.Name)
					}
					worstGrad = math.Max(worstGrad, relErr(g.Data, ref.Data))
					worstGradAbs = math.Max(worstGradAbs, absErr(g.Data, ref.Data))
				}
				t.Logf("%s base: logits rel. error %.2g (abs. %.2g), worst LoRA gradient rel. error %.2g (abs. %.2g)",
					dtype, e, absErr(logits, want[prefix+"logits"].Data), worstGrad, worstGradAbs)
				if e > tolerance || worstGrad > tolerance {
					t.Errorf("%s: logits error %.3g, gradient error %.3g > %g", dtype, e, worstGrad, tolerance)
				}
			}
			// What bfloat16 storage itself does to the model (PyTorch on both sides): informative.
			t.Logf("bf16 rounding of the base moves logits by %.2g (rel.), loss %.6f → %.6f",
				relErr(want["bf16.logits"].Data, want["logits"].Data), fc.Loss, fc.BF16Loss)
		})
	}
}

// run packs seqs into one pass and returns the logits of every position, the mean next-token cross-entropy
// and its LoRA gradients.
func run(t *testing.T, w *model.Weights, lora *model.LoRA, seqs [][]int) ([]float32, float64, *model.LoRA) {
	t.Helper()
	ctx := context.Background()
	p, err := w.Forward(ctx, seqs, model.PassOptions{LoRA: lora, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, p.Rows())
	for i := range all {
		all[i] = i
	}
	logits := p.Logits(all)
	V := w.Cfg.VocabSize
	var rows, targets []int
	for s, toks := range seqs {
		for i := 0; i+1 < len(toks); i++ {
			rows = append(rows, p.Offsets()[s]+i)
			targets = append(targets, toks[i+1])
		}
	}
	dl := make([]float32, len(rows)*V)
	var loss float64
	for i, r := range rows {
		row := logits[r*V : (r+1)*V]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, float64(v))
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v) - mx)
		}
		loss -= float64(row[targets[i]]) - mx - math.Log(sum)
		for j, v := range row {
			pj := math.Exp(float64(v)-mx) / sum
			if j == targets[i] {
				pj--
			}
			dl[i*V+j] = float32(pj / float64(len(rows)))
		}
	}
	g := lora.ZeroLike()
	if err := p.Backward(ctx, rows, dl, model.Grads{L: g}); err != nil {
		t.Fatal(err)
	}
	return logits, loss / float64(len(rows)), g
}

// readAdapter builds the LoRA adapter from adapter_config.json and adapter_model.safetensors (PEFT's names
// and shapes).
func readAdapter(t *testing.T, dir string, cfg model.Config) *model.LoRA {
	var ac struct {
		R             int      `json:"r"`
		Alpha         float32  `json:"lora_alpha"`
		TargetModules []string `json:"target_modules"`
	}
	readJSON(t, filepath.Join(dir, "adapter_config.json"), &ac)
	var targets [model.NumModules]bool
	for _, name := range ac.TargetModules {
		for m, hf := range model.ModuleNames {
			targets[m] = targets[m] || hf == name
		}
	}
	lora, err := model.NewLoRA(cfg, ac.R, ac.Alpha, 0, targets, 0)
	if err != nil {
		t.Fatal(err)
	}
	src := readSafetensors(t, filepath.Join(dir, "adapter_model.safetensors"))
	ts := lora.Tensors(cfg)
	if len(ts) != len(src) {
		t.Fatalf("adapter has %d tensors, engine expects %d", len(src), len(ts))
	}
	for _, tt := range ts {
		s, ok := src[tt.Name]
		if !ok || len(s.Data) != len(tt.Data) {
			t.Fatalf("adapter tensor %s missing or mis-shaped", tt.Name)
		}
		copy(tt.Data, s.Data)
	}
	return lora
}

// absErr is max|got − want|.
func absErr(got, want []float32) float64 {
	var diff float64
	for i, w := range want {
		diff = math.Max(diff, math.Abs(float64(got[i])-float64(w)))
	}
	return diff
}

func relErr(got, want []float32) float64 {
	var diff, scale float64
	for i, w := range want {
		diff = math.Max(diff, math.Abs(float64(got[i])-float64(w)))
		scale = math.Max(scale, math.Abs(float64(w)))
	}
	if len(got) != len(want) {
		return math.Inf(1)
	}
	return diff / scale
}

func readSafetensors(t *testing.T, path string) map[string]safetensors.Tensor {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := safetensors.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return st.Tensors
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
