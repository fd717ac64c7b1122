// Command rolloutbench measures RL rollouts through the HTTP API (`make bench-rollouts`): it writes
// random-weight Hugging Face snapshots at real models' shapes (SmolLM2-135M's body and Qwen2.5-0.5B's, both
// on Qwen3's real tokenizer), starts `trainyard serve` on them, sends G groups × N rollouts at once (each
// its own request, temperature 1, logprobs, a fixed number of new tokens) and prints aggregate tokens/s,
// latency percentiles, 429s, the prefill tokens saved by sharing and the ratio of the measured decoding
// step to this machine's roofline bound, beside PyTorch (Debian's python3-torch, same threads) decoding
// the same batch with a KV cache (engine/cmd/enginebench/torch_bench.py --work rollouts).
//
// With -loop (`make bench-loop`) it times whole ART-style RL iterations through the same API instead:
// G groups × N rollouts, a deterministic reward, the groups logged, an RL job followed to training_ended,
// and the first chat on the checkpoint it wrote (loop.go).
//
// It runs the trainyard binary as a child process, so it imports no server code; run it from the
// repository's root (the default paths of the binary, tokenizer files and PyTorch script are relative).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/trainyard/trainyard/engine/linalg"
	"github.com/trainyard/trainyard/internal/roofline"
	"github.com/trainyard/trainyard/internal/torchenv"
)

type options struct {
	shapes                          []shape
	groups                          []groupSpec
	tokens, threads, rows           int
	trainyard, tokenizerDir, models string
	logFile                         string // the service's log, written when it stops
	python, torchScript             string
	noTorch                         bool
	timeout                         time.Duration
	// The loop mode's (-loop): iterations per shape and G×N, the RL jobs' learning rate, the first
	// chat's tokens.
	loop                   bool
	iterations, chatTokens int
	learningRate           float64
}

func main() {
	var (
		o      options
		only   = flag.String("shapes", "", "comma-separated shapes to run (default all: "+shapeNames()+")")
		groups = flag.String("groups", "4x8,8x16", "runs of G groups × N rollouts each, comma-separated (-loop: default 4x8)")
	)
	flag.BoolVar(&o.loop, "loop", false, "time ART-style RL iterations instead (make bench-loop): rollouts, reward and log, RL job, first chat on the new checkpoint")
	flag.IntVar(&o.iterations, "iterations", 1, "-loop: RL iterations per shape and G×N, each on the previous one's checkpoint")
	flag.Float64Var(&o.learningRate, "learning-rate", 1e-5, "-loop: the RL jobs' learning rate")
	flag.IntVar(&o.chatTokens, "chat-tokens", 16, "-loop: new tokens of the first chat on the new checkpoint")
	flag.IntVar(&o.tokens, "tokens", 128, "new tokens per rollout")
	flag.IntVar(&o.threads, "threads", runtime.NumCPU(), "GOMAXPROCS of the service, threads of PyTorch and of the bandwidth measure")
	flag.IntVar(&o.rows, "rows", 0, "TRAINYARD_CHAT_CONCURRENCY of the service (0: its default, 32 × threads)")
	flag.StringVar(&o.trainyard, "trainyard", "bin/trainyard", "the trainyard binary")
	flag.StringVar(&o.tokenizerDir, "tokenizer", "engine/tokenizer/hf/testdata/qwen3", "directory of Qwen3's gzipped tokenizer files")
	flag.StringVar(&o.models, "models", "", "models directory to write the snapshots into and keep (default a temporary one); existing snapshots are reused")
	flag.StringVar(&o.python, "python", "/usr/bin/python3", "Python with torch")
	flag.StringVar(&o.torchScript, "torch-script", "engine/cmd/enginebench/torch_bench.py", "PyTorch side")
	flag.BoolVar(&o.noTorch, "no-torch", false, "skip PyTorch")
	flag.StringVar(&o.logFile, "log", "", "write the service's log (its JSON lines: a job's activities, chat's batches) to this file when it stops")
	flag.DurationVar(&o.timeout, "timeout", time.Hour, "give up on the whole run after this long")
	flag.Parse()
	if o.loop && !flagSet("groups") {
		*groups = "4x8"
	}
	var err error
	if o.groups, err = parseGroups(*groups); err != nil {
		fail(fmt.Errorf("-groups: %w", err))
	}
	for _, name := range strings.Split(*only, ",") {
		if strings.TrimSpace(name) == "" {
			continue
		}
		sh, ok := findShape(name)
		if !ok {
			fail(fmt.Errorf("-shapes: unknown shape %q (%s)", name, shapeNames()))
		}
		o.shapes = append(o.shapes, sh)
	}
	if len(o.shapes) == 0 {
		o.shapes = shapes
	}
	if o.tokens < 2 || o.threads < 1 || o.rows < 0 || o.iterations < 1 || o.chatTokens < 1 || o.learningRate <= 0 {
		fail(fmt.Errorf("-tokens must be at least 2, -threads, -iterations and -chat-tokens at least 1, -rows not negative and -learning-rate positive"))
	}
	if err := run(o); err != nil {
		fail(err)
	}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rolloutbench:", err)
	os.Exit(1)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rolloutbench: "+format+"\n", args...)
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	databaseURL := os.Getenv("DATABASE_URL")
	if databaseURL == "" {
		return fmt.Errorf("DATABASE_URL is not set (make bench-rollouts finds one with scripts/ensure-postgres.sh)")
	}
	if _, err := os.Stat(o.trainyard); err != nil {
		return fmt.Errorf("-trainyard: %w (make build)", err)
	}
	if !o.noTorch && !o.loop {
		if err := checkTorch(o.python, o.torchScript); err != nil {
			return err
		}
	}
	runtime.GOMAXPROCS(o.threads)
	tmp, err := os.MkdirTemp("", "rolloutbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	modelsDir := o.models
	if modelsDir == "" {
		modelsDir = tmp + "/models"
	}
	for i, sh := range o.shapes {
		start := time.Now()
		dir, err := writeSnapshot(modelsDir, sh, o.tokenizerDir, int64(i+1))
		if err != nil {
			return err
		}
		progress("%s snapshot in %s (%.0f s)", sh.name, dir, time.Since(start).Seconds())
	}
	if o.loop {
		return runLoopService(ctx, o, tmp, modelsDir, databaseURL)
	}
	progress("measuring bandwidth and peaks")
	m := roofline.Measure(o.threads)
	rows, rowsNote := o.rows, fmt.Sprintf("the service's rows, -rows %d", o.rows)
	var extra []string
	if o.rows > 0 {
		extra = append(extra, fmt.Sprintf("TRAINYARD_CHAT_CONCURRENCY=%d", o.rows))
	} else {
		rows, rowsNote = 32*o.threads, fmt.Sprintf("the service's default rows, 32 × %d threads", o.threads)
	}
	progress("starting %s serve", o.trainyard)
	svc, err := startService(o.trainyard, tmp+"/data", modelsDir, databaseURL, o.threads, extra)
	if err != nil {
		return err
	}
	sums, err := engineRuns(ctx, o, svc, m, rows)
	if stopErr := svc.stop(o.logFile); err == nil && stopErr != nil {
		progress("%v", stopErr)
	}
	if err != nil {
		return err
	}
	torch := "(not run)"
	if !o.noTorch {
		torch = torchenv.Version(o.python)
		for i := range sums {
			s := &sums[i]
			sh, _ := findShape(s.shape)
			progress("PyTorch %s %s, %d-token prompts", s.shape, s.spec, s.promptTokens)
			r, err := runTorch(o.python, o.torchScript, sh, o.threads, s.spec, s.promptTokens, o.tokens)
			if err != nil {
				return err
			}
			s.torch = &r
		}
	}
	printTable(os.Stdout, header{threads: o.threads, tokens: o.tokens, backend: linalg.Backend(), torch: torch,
		machine: m, rowsNote: rowsNote}, sums)
	return nil
}

// engineRuns measures every shape and G×N through the service: a warm-up request that loads the base
// model, then each run's rollouts, all at once.
func engineRuns(ctx context.Context, o options, svc *service, m roofline.Machine, rows int) ([]summary, error) {
	var sums []summary
	run := 0
	for _, sh := range o.shapes {
		cfg, err := sh.modelConfig()
		if err != nil {
			return nil, err
		}
		maxRollouts := 0
		for _, g := range o.groups {
			maxRollouts = max(maxRollouts, g.rollouts())
		}
		c := newClient(svc.api, svc.key, sh.modelName(), o.tokens, maxRollouts)
		start := time.Now()
		warm := prompt{system: systemPrompt, user: "Warm-up: say hello."}
		if err := c.complete(ctx, warm, 4); err != nil {
			return nil, fmt.Errorf("%s: %w", sh.name, err)
		}
		progress("%s loaded and warmed up (%.0f s)", sh.name, time.Since(start).Seconds())
		for _, g := range o.groups {
			run++
			before, hasMetric, err := scrapeCounter(ctx, svc.api, savedMetric)
			if err != nil {
				return nil, err
			}
			rs, wall := c.runGroups(ctx, groupPrompts(run, g.groups), g.n)
			after, _, err := scrapeCounter(ctx, svc.api, savedMetric)
			if err != nil {
				return nil, err
			}
			b := min(g.rollouts(), rows)
			s := summarize(sh.name, g, b, rs, wall, m.Bound(roofline.DecodeStepWeights(cfg, b), m.KernelPeak()))
			s.savedMetric, s.hasMetric = after-before, hasMetric
			for _, r := range rs {
				if r.err != nil && r.status != 429 {
					progress("%s %s: a rollout failed: %v", sh.name, g, r.err)
					break
				}
			}
			progress("%s %s: %d tokens in %.1f s, %.0f tok/s, step %s ms (bound %s ms)", sh.name, g, s.tokens,
				wall.Seconds(), s.tokensPerSecond, ms(s.step), ms(s.bound))
			sums = append(sums, s)
		}
	}
	return sums, nil
}

// runLoopService runs the loop mode against its own `trainyard serve` and prints its table.
func runLoopService(ctx context.Context, o options, tmp, modelsDir, databaseURL string) error {
	var extra []string
	if o.rows > 0 {
		extra = append(extra, fmt.Sprintf("TRAINYARD_CHAT_CONCURRENCY=%d", o.rows))
	}
	progress("starting %s serve", o.trainyard)
	svc, err := startService(o.trainyard, tmp+"/data", modelsDir, databaseURL, o.threads, extra)
	if err != nil {
		return err
	}
	its, err := runLoop(ctx, o, svc)
	if stopErr := svc.stop(o.logFile); err == nil && stopErr != nil {
		progress("%v", stopErr)
	}
	if err != nil {
		return fmt.Errorf("%w\n%s", err, svc.stderr.tail())
	}
	printLoopTable(os.Stdout, loopHeader{threads: o.threads, tokens: o.tokens, backend: linalg.Backend(),
		learningRate: o.learningRate}, its)
	return nil
}
