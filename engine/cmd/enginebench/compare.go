package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/engine/linalg"
	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/internal/roofline"
	"github.com/trainyard/trainyard/internal/torchenv"
)

// compareOptions are -compare's flags.
type compareOptions struct {
	python                                   string
	threads, seqs, seqLen, trainable, prompt int
	steps                                    int
	decode                                   int
	torchSeqs, only                          string
}

// runCompare measures this machine's roofline, then runs every workload on both systems and prints one
// table: tokens/s, GFLOP/s and its fraction of the peak each row is compared with, the fraction of the
// roofline bound, and peak RSS.
func runCompare(o compareOptions) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	script, err := os.CreateTemp("", "torch_bench-*.py")
	if err != nil {
		return err
	}
	defer os.Remove(script.Name())
	if _, err := script.Write(torchScript); err != nil {
		return err
	}
	if err := script.Close(); err != nil {
		return err
	}
	fewer := map[string]int{}
	for _, kv := range strings.Split(o.torchSeqs, ",") {
		if name, n, ok := strings.Cut(kv, "="); ok {
			var v int
			if _, err := fmt.Sscan(n, &v); err != nil || v <= 0 {
				return fmt.Errorf("-torch-seqs %q: %q is not a count", o.torchSeqs, n)
			}
			fewer[strings.ToLower(name)] = v
		}
	}
	// The machine is measured before and after the runs and the higher figures kept: on a shared machine a
	// burst of other work during one measurement would otherwise lower the peak below what the runs reached.
	measure := func() roofline.Machine {
		fmt.Fprintln(os.Stderr, "enginebench: measuring this machine's peaks and bandwidth")
		prev := runtime.GOMAXPROCS(o.threads)
		defer runtime.GOMAXPROCS(prev)
		return roofline.Measure(o.threads)
	}
	t := table{m: measure(), dot: linalg.BF16Dot(), pairsTrain: linalg.BF16Train(), pairsInfer: linalg.Pairs() && linalg.BF16Dot(),
		seqLen: o.seqLen}
	var failed []string
	for _, sh := range shapes {
		if o.only != "" && !containsFold(strings.Split(o.only, ","), sh.name) {
			continue
		}
		cfg, err := model.ParseHFConfig([]byte(sh.config))
		if err != nil {
			return fmt.Errorf("%s: %w", sh.name, err)
		}
		tseqs := o.seqs
		if n, ok := fewer[strings.ToLower(sh.name)]; ok && n < o.seqs {
			tseqs = n
		}
		for _, work := range []string{"rl", "sft", "infer"} {
			eargs := []string{"-shape", sh.name, "-work", work, "-seqs", fmt.Sprint(o.seqs), "-len", fmt.Sprint(o.seqLen),
				"-trainable", fmt.Sprint(o.trainable), "-prompt", fmt.Sprint(o.prompt), "-decode", fmt.Sprint(o.decode),
				"-steps", fmt.Sprint(o.steps)}
			// A workload that fails (a memory budget the step no longer fits, a crash) is reported under the
			// table and the others still run: one row must not cost the whole table.
			eng, err := childEnv(o.threads, self, eargs...)
			if err != nil {
				fmt.Fprintln(os.Stderr, "enginebench:", err)
				failed = append(failed, fmt.Sprintf("%s %s: %s", sh.name, work, lastLine(err)))
				continue
			}
			targs := []string{script.Name(), "--config", sh.config, "--work", work, "--seqs", fmt.Sprint(tseqs),
				"--len", fmt.Sprint(o.seqLen), "--trainable", fmt.Sprint(o.trainable), "--prompt", fmt.Sprint(o.prompt),
				"--decode", fmt.Sprint(o.decode), "--threads", fmt.Sprint(o.threads), "--steps", fmt.Sprint(o.steps)}
			tor, err := child(torchenv.Env(os.Environ(), o.threads), o.python, targs...)
			if err == nil && len(eng) != len(tor) {
				err = fmt.Errorf("engine gave %d results, PyTorch %d", len(eng), len(tor))
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "enginebench:", err)
				failed = append(failed, fmt.Sprintf("%s %s (PyTorch): %s", sh.name, work, lastLine(err)))
				continue
			}
			for i, e := range eng {
				t.rows = append(t.rows, row{shape: sh.name, engine: e, torch: tor[i],
					engineCost: o.cost(cfg, e), torchCost: o.cost(cfg, tor[i])})
			}
		}
	}
	t.m = t.m.Max(measure())
	fmt.Printf("enginebench: engine (%s kernels, bfloat16 base, GOMAXPROCS=%d) vs PyTorch %s (float32, %d threads, OMP_WAIT_POLICY=%s), random weights\n",
		linalg.Backend(), o.threads, torchenv.Version(o.python), o.threads, waitPolicy(o.threads))
	t.print(os.Stdout)
	if len(failed) > 0 {
		fmt.Printf("\nNot measured (%d):\n", len(failed))
		for _, f := range failed {
			fmt.Printf("- %s\n", f)
		}
		return fmt.Errorf("%d workload(s) failed", len(failed))
	}
	return nil
}

// lastLine is the last non-empty line of err's message: a child's own error, after the command line and
// whatever it logged before it.
func lastLine(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// waitPolicy is the OMP_WAIT_POLICY PyTorch runs under.
func waitPolicy(threads int) string {
	for _, kv := range torchenv.Env(os.Environ(), threads) {
		if v, ok := strings.CutPrefix(kv, "OMP_WAIT_POLICY="); ok {
			return v
		}
	}
	return ""
}

// cost is the useful work of a measurement r at shape cfg (roofline's counts; the engine's weights are
// bfloat16, PyTorch's float32).
func (o compareOptions) cost(cfg model.Config, r result) roofline.Cost {
	weightBytes := 2.0
	if r.System != "engine" {
		weightBytes = 4
	}
	switch r.Work {
	case "rl", "sft":
		return roofline.TrainStep(cfg, r.Seqs, o.seqLen, o.trainable, engine.DefaultLoRAConfig().Rank)
	case "prefill":
		return roofline.Prefill(cfg, r.Tokens, weightBytes)
	default: // decode: steps = tokens / batch, after the prompt
		return roofline.Decode(cfg, r.Batch, o.prompt, r.Tokens/max(r.Batch, 1), weightBytes)
	}
}

// elapsed is r's measured time.
func (r result) elapsed() time.Duration { return time.Duration(r.Seconds * float64(time.Second)) }
