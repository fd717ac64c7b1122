// Command enginebench measures the engine at real open-weight models' shapes with random weights: an RL
// step, an SFT step, a prefill and decoding at batch 1 and 8, with tokens/s and peak RSS; with -compare it
// runs the same work in PyTorch (Debian's python3-torch, the same thread count) too and prints the two side
// by side (`make bench-compare`).
//
// Every workload runs in a process of its own (this binary re-executed, or torch_bench.py), so each peak
// RSS — getrusage's ru_maxrss of that child, read by the parent the same way for both systems — belongs to
// that workload alone: building the model, a warm-up step and the measured step.
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/engine/model"
)

//go:embed torch_bench.py
var torchScript []byte

// shape is a model architecture to measure at. The configs are Llama config.json files with the dimensions
// of the named models (Qwen2.5's q/k/v biases left out on both sides: a vector add per projection), and
// Gemma 3's own.
type shape struct {
	name, config string
	// limit, when set, is the memory limit a training step runs under (as TRAINYARD_MEMORY_LIMIT sets it
	// for a job: micro-batches sized by Base.FitStepMemory): issue 22's budgets for Gemma 3.
	limit int64
}

var shapes = []shape{
	{"SmolLM2-135M", `{"model_type":"llama","vocab_size":49152,"hidden_size":576,"intermediate_size":1536,
		"num_hidden_layers":30,"num_attention_heads":9,"num_key_value_heads":3,"head_dim":64,
		"max_position_embeddings":8192,"rope_theta":100000,"rms_norm_eps":1e-5,"tie_word_embeddings":true}`, 0},
	{"Qwen2.5-0.5B", `{"model_type":"llama","vocab_size":151936,"hidden_size":896,"intermediate_size":4864,
		"num_hidden_layers":24,"num_attention_heads":14,"num_key_value_heads":2,"head_dim":64,
		"max_position_embeddings":32768,"rope_theta":1000000,"rms_norm_eps":1e-6,"tie_word_embeddings":true}`, 0},
	// Gemma 3's text models as published (Gemma3ForCausalLM): local layers with a 512-position window, every
	// sixth global.
	{"Gemma3-270M", `{"model_type":"gemma3_text","vocab_size":262144,"hidden_size":640,"intermediate_size":2048,
		"num_hidden_layers":18,"num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,
		"max_position_embeddings":32768,"rope_theta":1000000,"rope_local_base_freq":10000,"rms_norm_eps":1e-6,
		"query_pre_attn_scalar":256,"sliding_window":512,"sliding_window_pattern":6,"tie_word_embeddings":true}`,
		1500e6},
	{"Gemma3-1B", `{"model_type":"gemma3_text","vocab_size":262144,"hidden_size":1152,"intermediate_size":6912,
		"num_hidden_layers":26,"num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,
		"max_position_embeddings":32768,"rope_theta":1000000,"rope_local_base_freq":10000,"rms_norm_eps":1e-6,
		"query_pre_attn_scalar":256,"sliding_window":512,"sliding_window_pattern":6,"tie_word_embeddings":true}`,
		4e9},
}

// result is one measurement, printed by a child as a JSON line.
type result struct {
	System  string  `json:"system"`
	Work    string  `json:"work"`
	Batch   int     `json:"batch,omitempty"`
	Seqs    int     `json:"seqs,omitempty"`
	Tokens  int     `json:"tokens"`
	Seconds float64 `json:"seconds"` // a training workload's: the median of its measured steps
	// StepSeconds are a training workload's measured steps, in order.
	StepSeconds []float64 `json:"step_seconds,omitempty"`
	// The training step's own matmul_gflops: the flops its products issued (attention causally) per second.
	MatmulGFLOPs float64 `json:"matmul_gflops,omitempty"`
	rss          int64   // peak RSS of the child process (bytes), filled by the parent
}

func main() {
	var (
		compare   = flag.Bool("compare", false, "run every workload on both systems and print the table")
		shapeName = flag.String("shape", "SmolLM2-135M", "model shape: "+shapeNames())
		work      = flag.String("work", "rl", "rl, sft or infer (prefill, decode at batch 1 and 8)")
		seqs      = flag.Int("seqs", 32, "sequences of a training step")
		seqLen    = flag.Int("len", 128, "tokens per training sequence")
		steps     = flag.Int("steps", 3, "measured training steps (after the warm-up), each on new sequences: the median is reported")
		trainable = flag.Int("trainable", 96, "trailing trainable tokens per sequence")
		group     = flag.Int("group", 1, "sequences per prompt: groups of this many share their untrainable leading tokens, as RL rollouts of one prompt do (not with -compare)")
		prompt    = flag.Int("prompt", 128, "prompt tokens (prefill, and the context decoding starts from)")
		decode    = flag.Int("decode", 32, "decoding steps")
		python    = flag.String("python", "/usr/bin/python3", "Python with torch (compare)")
		threads   = flag.Int("threads", runtime.GOMAXPROCS(0), "threads of both systems (compare)")
		torchSeqs = flag.String("torch-seqs", "Qwen2.5-0.5B=8,Gemma3-1B=8", "sequences of PyTorch's training steps per shape, when fewer than -seqs (compare; name=n,...)")
		only      = flag.String("shapes", "", "comma-separated shapes to run (compare; default all)")
		profile   = flag.String("cpuprofile", "", "write a CPU profile of the workload to this file: a training workload's measured steps only (not with -compare)")
		traceOut  = flag.String("trace", "", "write an execution trace of the workload to this file (go tool trace), as -cpuprofile covers it: where the cores wait")
		vocab     = flag.Int("vocab", 0, "the shape's vocabulary size, when not its own (not with -compare; 151936: SmolLM2-135M's body with Qwen3's vocabulary, as bench-rollouts and bench-loop serve it)")
	)
	flag.Parse()
	if *compare {
		o := compareOptions{python: *python, threads: *threads, seqs: *seqs, seqLen: *seqLen, trainable: *trainable, steps: *steps,
			prompt: *prompt, decode: *decode, torchSeqs: *torchSeqs, only: *only}
		if err := runCompare(o); err != nil {
			fmt.Fprintln(os.Stderr, "enginebench:", err)
			os.Exit(1)
		}
		return
	}
	sh, ok := findShape(*shapeName)
	if !ok {
		fmt.Fprintf(os.Stderr, "enginebench: unknown shape %q (%s)\n", *shapeName, shapeNames())
		os.Exit(2)
	}
	if *vocab > 0 {
		var cfg map[string]any
		if err := json.Unmarshal([]byte(sh.config), &cfg); err != nil {
			fmt.Fprintln(os.Stderr, "enginebench:", err)
			os.Exit(1)
		}
		cfg["vocab_size"] = *vocab
		b, _ := json.Marshal(cfg)
		sh.config = string(b)
	}
	// A training workload's profile covers its measured steps only: the model's build and the warm-up step
	// map the activation arena in, and the page faults' kernel time lands on whatever first touched a page
	// (mostly the forward products' stores), which made the products look a quarter slower than they run.
	begin := func() {}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "enginebench:", err)
			os.Exit(1)
		}
		begin = func() {
			if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintln(os.Stderr, "enginebench:", err)
				os.Exit(1)
			}
		}
		defer pprof.StopCPUProfile()
	}
	if *traceOut != "" {
		f, err := os.Create(*traceOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, "enginebench:", err)
			os.Exit(1)
		}
		prev := begin
		begin = func() {
			prev()
			if err := trace.Start(f); err != nil {
				fmt.Fprintln(os.Stderr, "enginebench:", err)
				os.Exit(1)
			}
		}
		defer trace.Stop()
	}
	var err error
	switch *work {
	case "rl", "sft":
		err = trainWork(sh, *work, *seqs, *seqLen, *trainable, *group, *steps, begin)
	case "infer":
		begin()
		err = inferWork(sh, *prompt, *decode)
	default:
		err = fmt.Errorf("unknown work %q", *work)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
}

func shapeNames() string {
	var n []string
	for _, s := range shapes {
		n = append(n, s.name)
	}
	return strings.Join(n, ", ")
}

func findShape(name string) (shape, bool) {
	for _, s := range shapes {
		if strings.EqualFold(s.name, name) {
			return s, true
		}
	}
	return shape{}, false
}

func emit(r result) {
	r.System = "engine"
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}

// trainWork measures one RL (CISPO, token level) or SFT step of n sequences of T random tokens whose last
// trainable tokens get loss, LoRA rank 8 on all seven projections, after a warm-up step of as many other
// sequences: the measured step is a worker's steady state, whose activation memory an earlier step (an
// earlier job, through Trainer.Close) has mapped in. A one-sequence warm-up left the measured step to map
// a gigabyte of arena first — about 300,000 pages, 1.5–2 s of the 135M step on the 2-core Zen 5 VM, whose
// hypervisor takes an exit per page — which a service pays once per process, not per step. torch_bench.py
// warms PyTorch up the same way. In groups of group sequences, the tokens before the trainable ones are
// the same (a prompt and its rollouts). Of steps measured steps, each on new sequences, the median is the
// result: one step's time moved by ±15% between runs on a shared 2-core VM, PyTorch's as much, so that a
// ratio of two single steps could not say which side of 3× it was on.
func trainWork(sh shape, work string, n, T, trainable, group, steps int, begin func()) error {
	ctx := context.Background()
	b, err := engine.NewRandomBase(sh.name, []byte(sh.config), 1)
	if err != nil {
		return err
	}
	a, err := b.NewAdapter(engine.DefaultLoRAConfig(), 1)
	if err != nil {
		return err
	}
	tr := engine.NewTrainer(b, a, nil)
	if sh.limit > 0 {
		est, err := b.FitStepMemory(engine.StepShape{SeqLen: T, Sequences: n, LoRA: engine.DefaultLoRAConfig()}, sh.limit)
		if err != nil {
			return err
		}
		tr.SetActivationBudget(est.ActivationBudget)
		// The collector's soft limit too (GOMEMLIMIT): with a live heap of weights and activations, the
		// default GOGC lets a step's garbage grow to as much again before collecting it.
		debug.SetMemoryLimit(sh.limit)
	}
	mk := func(n int, seed int64) []engine.RLSample {
		rng := rand.New(rand.NewSource(seed))
		out := make([]engine.RLSample, n)
		for i := range out {
			s := engine.Sequence{Tokens: make([]int, T), Trainable: make([]bool, T), OldLogprobs: make([]float32, T)}
			for j := range s.Tokens {
				s.Tokens[j] = rng.Intn(b.VocabSize())
				if i%max(1, group) > 0 && j < T-trainable {
					s.Tokens[j] = out[i-1].Tokens[j]
				}
				s.Trainable[j] = j >= T-trainable
				s.OldLogprobs[j] = -float32(math.Log(float64(b.VocabSize())))
			}
			out[i] = engine.RLSample{Sequence: s, Advantage: float32(rng.NormFloat64())}
		}
		return out
	}
	step := func(batch []engine.RLSample) (engine.StepStats, error) {
		if work == "rl" {
			return tr.RLStep(ctx, batch, engine.RLConfig{}, engine.DefaultAdamWConfig())
		}
		seqs := make([]engine.Sequence, len(batch))
		for i, s := range batch {
			seqs[i] = s.Sequence
		}
		return tr.SFTStep(ctx, seqs, engine.DefaultAdamWConfig())
	}
	if _, err := step(mk(n, 1)); err != nil {
		return err
	}
	begin()
	times := make([]float64, max(1, steps))
	gflops := make([]float64, len(times))
	for i := range times {
		batch := mk(n, int64(2+i))
		start := time.Now()
		st, err := step(batch)
		if err != nil {
			return err
		}
		times[i] = time.Since(start).Seconds()
		gflops[i] = st["matmul_gflops"]
	}
	emit(result{Work: work, Seqs: n, Tokens: n * T, Seconds: median(times), StepSeconds: times, MatmulGFLOPs: median(gflops)})
	return nil
}

// median is the middle value of xs (the mean of the middle two for an even count); xs is not changed.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// inferWork measures the prefill of a prompt (logits of its last position only) and greedy decoding from
// it with a KV cache at batch 1 and 8 (the batch's rows go through every projection as one product).
func inferWork(sh shape, prompt, steps int) error {
	ctx := context.Background()
	cfg, err := model.ParseHFConfig([]byte(sh.config))
	if err != nil {
		return err
	}
	w, err := model.NewRandomWeights(cfg, model.BF16, 1)
	if err != nil {
		return err
	}
	w.Pack() // as engine.NewRandomBase and OpenDir hold a base
	rng := rand.New(rand.NewSource(3))
	ids := make([]int, prompt)
	for i := range ids {
		ids[i] = rng.Intn(cfg.VocabSize)
	}
	warm := w.NewCache(8)
	if _, err := w.Prefill(ctx, warm, ids[:8], nil); err != nil {
		return err
	}
	cache := w.NewCache(prompt + steps)
	start := time.Now()
	logits, err := w.Prefill(ctx, cache, ids, nil)
	if err != nil {
		return err
	}
	emit(result{Work: "prefill", Batch: 1, Tokens: prompt, Seconds: time.Since(start).Seconds()})
	first := argmax(logits)
	for _, batch := range []int{1, 8} {
		caches := make([]*model.Cache, batch)
		next := make([]int, batch)
		for i := range caches {
			caches[i] = cache.Clone()
			next[i] = first
		}
		start := time.Now()
		for s := 0; s < steps; s++ {
			logits, err := w.Decode(ctx, caches, next, nil)
			if err != nil {
				return err
			}
			for i := range next {
				next[i] = argmax(logits[i*cfg.VocabSize : (i+1)*cfg.VocabSize])
			}
		}
		emit(result{Work: "decode", Batch: batch, Tokens: batch * steps, Seconds: time.Since(start).Seconds()})
	}
	return nil
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// child runs one workload in a process of its own with environment env and returns its results with the
// process's peak RSS.
func child(env []string, name string, args ...string) ([]result, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024 // KiB on Linux
	// Progress for whoever watches a long run; the table comes when both systems are done.
	fmt.Fprintf(os.Stderr, "%s peak RSS %s: %s", filepath.Base(name), gib(rss), stdout.String())
	var out []result
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: output %q: %w", name, sc.Text(), err)
		}
		r.rss = rss
		out = append(out, r)
	}
	return out, nil
}

// childEnv runs this binary as a child with GOMAXPROCS set to the thread count.
func childEnv(threads int, name string, args ...string) ([]result, error) {
	return child(append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", threads)), name, args...)
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(strings.TrimSpace(v), s) {
			return true
		}
	}
	return false
}

func gib(b int64) string { return fmt.Sprintf("%.2f GB", float64(b)/1e9) }
