// Command rl-toy improves trainyard's built-in tiny-chat model with
// reinforcement learning on a task with a programmatic reward (single-digit
// arithmetic, or replying in exactly three words), through the public HTTP API only
// (plain net/http and JSON, nothing of trainyard imported), in the order
// the ART client uses:
//
//  1. POST /v1/preview/models (return_existing) registers the model;
//  2. each step: GET .../checkpoints?limit=1&order=desc finds the newest
//     checkpoint; /v1/chat/completions samples a group of answers per
//     question from it; a program scores them (1 = the right answer);
//     POST .../log stores the held-out (val) groups; POST
//     /v1/preview/training-jobs trains one step on the train groups; GET
//     .../events?after=... follows the job until it ends.
//
// The reward printed per step is measured on a fixed set of held-out
// questions the model is never trained on.
//
//	export TRAINYARD_API_KEY=ty_...   # printed by `make run`
//	go run ./examples/rl-toy
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/trainyard/trainyard/examples/trainingapi"
)

// options are the command-line flags.
type options struct {
	baseURL, apiKey     string
	project, name, base string
	steps, groupSize    int
	prompts, valPrompts int
	learningRate, temp  float64
	task, ops           string
	seed                int64
	concurrency         int
	summaryPath         string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("rl-toy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.baseURL, "base-url", envOr("TRAINYARD_BASE_URL", "http://127.0.0.1:8080/v1"), "API base URL, ending in /v1 (env TRAINYARD_BASE_URL)")
	fs.StringVar(&o.apiKey, "api-key", os.Getenv("TRAINYARD_API_KEY"), "API key (env TRAINYARD_API_KEY; `make run` prints it)")
	fs.StringVar(&o.project, "project", "examples", "project of the model")
	fs.StringVar(&o.name, "name", "rl-toy", "model name; running again with the same name resumes from its newest checkpoint")
	fs.StringVar(&o.base, "base-model", "trainyard/tiny-chat", "base model")
	fs.IntVar(&o.steps, "steps", 10, "training steps (one RL job each)")
	fs.IntVar(&o.groupSize, "group-size", 8, "completions sampled per question (the group)")
	fs.IntVar(&o.prompts, "prompts", 16, "training questions per step")
	fs.IntVar(&o.valPrompts, "val-prompts", 16, "held-out questions the reward is measured on")
	fs.Float64Var(&o.learningRate, "learning-rate", 3e-3, "learning rate of each RL job")
	fs.Float64Var(&o.temp, "temperature", 1, "sampling temperature")
	fs.StringVar(&o.task, "task", "three-words", "three-words or arithmetic")
	fs.StringVar(&o.ops, "ops", "+-*", "operators of the arithmetic questions (+, - and *)")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the question split and of sampling")
	fs.IntVar(&o.concurrency, "concurrency", 4, "chat requests in flight")
	fs.StringVar(&o.summaryPath, "summary", "", "also write the reward curve as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.apiKey == "":
		return o, errors.New("no API key: export TRAINYARD_API_KEY (printed by `make run`) or pass -api-key")
	case o.steps < 1 || o.groupSize < 2 || o.prompts < 1:
		return o, errors.New("-steps and -prompts must be at least 1, -group-size at least 2")
	}
	return o, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// summary is what -summary writes: the curve, for plotting or checking.
type summary struct {
	ModelID     string    `json:"model_id"`
	Model       string    `json:"model"`
	StartStep   int       `json:"start_step"`
	Steps       []int     `json:"steps"`
	ValReward   []float64 `json:"val_reward"`   // held-out reward at each step (before training it)
	TrainReward []float64 `json:"train_reward"` // reward of the groups each job trained on
	JobIDs      []string  `json:"job_ids"`
	Seconds     float64   `json:"seconds"`
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rl-toy:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rl-toy:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) error {
	started := time.Now()
	tk, err := newTask(o.task, o.ops, o.valPrompts, o.seed)
	if err != nil {
		return err
	}
	c := trainingapi.NewClient(o.baseURL, o.apiKey)
	m, err := c.RegisterModel(ctx, o.project, o.name, o.base)
	if err != nil {
		return fmt.Errorf("register the model: %w", err)
	}
	artifact := fmt.Sprintf("wandb-artifact:///%s/%s/%s", m.Entity, m.Project, m.Name)
	fmt.Fprintf(out, "model %s (id %s) on %s\n", artifact, m.ID, m.BaseModel)
	fmt.Fprintf(out, "task %s: %s; %d training questions, %d held out\n", tk.Name, tk.About, len(tk.train), len(tk.val))
	fmt.Fprintf(out, "each step: %d questions x %d samples, learning rate %g, temperature %g\n\n",
		o.prompts, o.groupSize, o.learningRate, o.temp)

	sum := summary{ModelID: m.ID, Model: artifact}
	rng := rand.New(rand.NewSource(o.seed))
	for i := 0; i <= o.steps; i++ {
		step, err := c.NewestStep(ctx, m.ID)
		if err != nil {
			return fmt.Errorf("newest checkpoint: %w", err)
		}
		if i == 0 {
			sum.StartStep = step
			if step > 0 {
				fmt.Fprintf(out, "resuming from checkpoint step %d (pass -name to start a fresh model)\n", step)
			}
		}
		s := sampling{Model: fmt.Sprintf("%s:step%d", artifact, step), N: o.groupSize, Temperature: o.temp,
			MaxTokens: tk.MaxTokens, Concurrency: o.concurrency}
		// The held-out groups use the same seeds every step, so the curve
		// changes only because the model does.
		t0 := time.Now()
		valGroups, valReward, err := rollout(ctx, c, s, tk.val, o.seed*1_000_000)
		if err != nil {
			return fmt.Errorf("sample the held-out questions: %w", err)
		}
		if _, err := c.LogGroups(ctx, m.ID, "val", valGroups); err != nil {
			return fmt.Errorf("log the held-out groups: %w", err)
		}
		sum.Steps, sum.ValReward = append(sum.Steps, step), append(sum.ValReward, valReward)
		if i == o.steps {
			fmt.Fprintf(out, "step %3d  val reward %.3f  (%.1fs)\n", step, valReward, time.Since(t0).Seconds())
			break
		}
		trainGroups, trainReward, err := rollout(ctx, c, s, tk.drawTrain(rng, o.prompts), o.seed*1_000_000+int64(step+1)*1000)
		if err != nil {
			return fmt.Errorf("sample the training questions: %w", err)
		}
		sum.TrainReward = append(sum.TrainReward, trainReward)
		fmt.Fprintf(out, "step %3d  val reward %.3f  train reward %.3f  (sampled in %.1fs)\n",
			step, valReward, trainReward, time.Since(t0).Seconds())
		jobID, err := train(ctx, c, m.ID, trainGroups, o.learningRate, out)
		if err != nil {
			return err
		}
		sum.JobIDs = append(sum.JobIDs, jobID)
	}
	sum.Seconds = time.Since(started).Seconds()
	printCurve(out, sum)
	if o.summaryPath != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(o.summaryPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write the summary: %w", err)
		}
	}
	return nil
}

// train submits one RL job on the groups, follows it to its end and shows
// the job's final state.
func train(ctx context.Context, c *trainingapi.Client, modelID string, groups []trajectoryGroup, lr float64, out io.Writer) (string, error) {
	var created struct {
		ID string `json:"id"`
	}
	err := c.Do(ctx, http.MethodPost, "/preview/training-jobs", map[string]any{
		"model_id":            modelID,
		"trajectory_groups":   groups,
		"experimental_config": map[string]any{"learning_rate": lr},
	}, &created)
	if err != nil {
		return "", fmt.Errorf("create the training job: %w", err)
	}
	fmt.Fprintf(out, "    job %s\n", created.ID)
	if _, err := c.WaitForJob(ctx, created.ID, out, "loss", "reward", "reward_std_dev", "grad_norm", "num_trainable_tokens"); err != nil {
		return created.ID, fmt.Errorf("training job %s: %w", created.ID, err)
	}
	j, err := c.GetJob(ctx, created.ID)
	if err != nil {
		return created.ID, fmt.Errorf("read training job %s: %w", created.ID, err)
	}
	fmt.Fprintf(out, "    job %s %s, step %d/%d\n", j.ID, j.Status, j.CurrentStep, j.TotalSteps)
	return created.ID, nil
}

// printCurve prints the held-out reward per step as a small bar chart.
func printCurve(out io.Writer, s summary) {
	fmt.Fprintf(out, "\nheld-out reward per checkpoint step (%.0fs in all):\n", s.Seconds)
	for i, step := range s.Steps {
		r := s.ValReward[i]
		fmt.Fprintf(out, "  step %3d  %.3f  %s\n", step, r, strings.Repeat("#", int(r*50+0.5)))
	}
}
