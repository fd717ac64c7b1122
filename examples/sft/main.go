// Command sft teaches trainyard's built-in tiny-chat model facts it cannot
// know (the name of our train yard, who runs it, ...) with supervised
// fine-tuning, through the public HTTP API only (plain net/http and JSON,
// nothing of trainyard imported):
//
//  1. POST /v1/preview/models (return_existing) registers the model;
//
//  2. POST /v1/preview/files uploads the JSONL conversations (data.jsonl,
//     shipped with this program) and answers their training_data_url;
//
//  3. POST /v1/preview/sft-training-jobs starts the job; GET .../events
//     ?after=... follows it, printing the loss of every step;
//
//  4. GET .../checkpoints?limit=1&order=desc finds the new checkpoint, and
//     /v1/chat/completions asks it, and the base model, the questions.
//
//     export TRAINYARD_API_KEY=ty_...   # printed by `make run`
//     go run ./examples/sft
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/trainyard/trainyard/examples/trainingapi"
)

// data.jsonl holds six facts, each asked five ways.
//
//go:embed data.jsonl
var defaultData []byte

// options are the command-line flags.
type options struct {
	baseURL, apiKey     string
	project, name, base string
	dataPath            string
	epochs, batchSize   int
	learningRate        float64
	seed                int64
	summaryPath         string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("sft", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.baseURL, "base-url", envOr("TRAINYARD_BASE_URL", "http://127.0.0.1:8080/v1"), "API base URL, ending in /v1 (env TRAINYARD_BASE_URL)")
	fs.StringVar(&o.apiKey, "api-key", os.Getenv("TRAINYARD_API_KEY"), "API key (env TRAINYARD_API_KEY; `make run` prints it)")
	fs.StringVar(&o.project, "project", "examples", "project of the model and of the uploaded data")
	fs.StringVar(&o.name, "name", "sft-facts", "model name (training again with the same name continues from its newest checkpoint)")
	fs.StringVar(&o.base, "base-model", "trainyard/tiny-chat", "base model")
	fs.StringVar(&o.dataPath, "data", "", "JSONL training data (default: the data.jsonl shipped with this example)")
	fs.IntVar(&o.epochs, "epochs", 16, "passes over the data")
	fs.IntVar(&o.batchSize, "batch-size", 10, "conversations per gradient step")
	fs.Float64Var(&o.learningRate, "learning-rate", 3e-3, "learning rate")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the shuffling of the data")
	fs.StringVar(&o.summaryPath, "summary", "", "also write the loss curve and the answers as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.apiKey == "":
		return o, errors.New("no API key: export TRAINYARD_API_KEY (printed by `make run`) or pass -api-key")
	case o.epochs < 1 || o.batchSize < 1:
		return o, errors.New("-epochs and -batch-size must be at least 1")
	}
	return o, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// summary is what -summary writes.
type summary struct {
	ModelID         string    `json:"model_id"`
	JobID           string    `json:"job_id"`
	TrainingDataURL string    `json:"training_data_url"`
	Loss            []float64 `json:"loss"` // per gradient step
	CheckpointStep  int       `json:"checkpoint_step"`
	Quiz            []answer  `json:"quiz"`
	BaseCorrect     int       `json:"base_correct"`
	TunedCorrect    int       `json:"tuned_correct"`
	Seconds         float64   `json:"seconds"`
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sft:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sft:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) error {
	started := time.Now()
	data := defaultData
	if o.dataPath != "" {
		var err error
		if data, err = os.ReadFile(o.dataPath); err != nil {
			return err
		}
	}
	quiz, err := quizOf(data)
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

	dataURL, err := upload(ctx, c, m.Entity, o.project, "sft-data", data)
	if err != nil {
		return fmt.Errorf("upload the training data: %w", err)
	}
	fmt.Fprintf(out, "training data: %s (%d conversations, %d facts)\n", dataURL, countLines(data), len(quiz))

	jobID, losses, err := trainSFT(ctx, c, m.ID, dataURL, o, out)
	if err != nil {
		return err
	}
	step, err := c.NewestStep(ctx, m.ID)
	if err != nil {
		return fmt.Errorf("newest checkpoint: %w", err)
	}
	tuned := fmt.Sprintf("%s:step%d", artifact, step)
	fmt.Fprintf(out, "\nnewest checkpoint: step %d\n\n", step)

	answers, err := askAll(ctx, c, quiz, m.BaseModel, tuned)
	if err != nil {
		return err
	}
	sum := summary{ModelID: m.ID, JobID: jobID, TrainingDataURL: dataURL, Loss: losses, CheckpointStep: step, Quiz: answers}
	for _, a := range answers {
		fmt.Fprintf(out, "Q: %s\n   taught:  %s\n   base:    %s %s\n   trained: %s %s\n",
			a.Question, a.Taught, mark(a.BaseCorrect), a.Base, mark(a.TunedCorrect), a.Tuned)
		if a.BaseCorrect {
			sum.BaseCorrect++
		}
		if a.TunedCorrect {
			sum.TunedCorrect++
		}
	}
	sum.Seconds = time.Since(started).Seconds()
	fmt.Fprintf(out, "\nanswered as taught: base model %d/%d, trained model %d/%d  (%.0fs in all)\n",
		sum.BaseCorrect, len(answers), sum.TunedCorrect, len(answers), sum.Seconds)
	if o.summaryPath != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(o.summaryPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write the summary: %w", err)
		}
	}
	return nil
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}
