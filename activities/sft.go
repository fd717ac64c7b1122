package activities

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/jobspec"
)

// prepareSFT reads the JSONL training data, renders every conversation with
// loss on its assistant turns (all, or the last one), and lays out
// epochs × batches, one gradient step per batch.
func (a *Activities) prepareSFT(ctx context.Context, job *trainyard.Job, model *trainyard.Model, cfg jobspec.JobConfig, base *engine.Base) (*plan, int, error) {
	settings, errs := jobspec.ParseSFTConfig(cfg.Config, cfg.ExperimentalConfig)
	if len(errs) > 0 {
		return nil, 0, invalidf("%s", describe(errs))
	}
	data, err := a.fetchData(ctx, job, model, cfg.TrainingDataURL)
	if err != nil {
		return nil, 0, err
	}
	seqs, err := parseSFTData(data, base, settings.AssistantTurns == "last")
	if err != nil {
		return nil, 0, err
	}
	n := len(seqs)
	bs := settings.BatchSize
	if bs == 0 {
		bs = jobspec.AutoBatchSize(n)
	}
	bs = min(bs, n)
	perEpoch := (n + bs - 1) / bs
	total := perEpoch * settings.Epochs
	if settings.LearningRates == nil {
		settings.LearningRates = []float64{defaultLearningRate(base, trainyard.JobKindSFT)}
	}
	rates, err := settings.StepLearningRates(total)
	if err != nil {
		return nil, 0, invalidf("%v", err)
	}
	p := &plan{Seqs: seqs, Steps: make([]planStep, 0, total)}
	for epoch := range settings.Epochs {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		if settings.Shuffle {
			rng := rand.New(rand.NewPCG(uint64(settings.Seed), uint64(epoch)))
			rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		for start := 0; start < n; start += bs {
			batch := order[start:min(start+bs, n)]
			step := len(p.Steps)
			p.Steps = append(p.Steps, planStep{Batch: batch, LearningRate: float32(rates[step]),
				Metrics: map[string]float64{"epoch": float64(epoch + 1)}})
		}
	}
	return p, n, nil
}

// parseSFTData parses JSONL conversations. Blank lines are skipped; any
// other line must pass jobspec.ParseSFTLine and render within the model's
// context.
func parseSFTData(data []byte, base *engine.Base, lastOnly bool) ([]engine.Sequence, error) {
	var seqs []engine.Sequence
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		msgs, tools, err := sftMessages(line, lastOnly)
		if err != nil {
			return nil, invalidf("training data line %d%v", lineNo, err)
		}
		seq, err := render(base, msgs, tools)
		if err != nil {
			return nil, invalidf("training data line %d: %v", lineNo, err)
		}
		seqs = append(seqs, seq)
	}
	if err := sc.Err(); err != nil {
		return nil, invalidf("training data cannot be read as lines: %v", err)
	}
	if len(seqs) == 0 {
		return nil, invalidf("the training data has no conversations")
	}
	return seqs, nil
}

// sftMessages converts one checked line (jobspec.ParseSFTLine) for the
// engine; lastOnly trains on the last assistant turn only.
func sftMessages(line []byte, lastOnly bool) ([]engine.Message, []engine.Tool, error) {
	l, err := jobspec.ParseSFTLine(line)
	if err != nil {
		return nil, nil, err
	}
	msgs := make([]engine.Message, len(l.Messages))
	last := -1
	for i := range l.Messages {
		m, err := engineMessage(&l.Messages[i])
		if err != nil {
			return nil, nil, fmt.Errorf(", messages[%d]: %v", i, err)
		}
		if m.Role == "assistant" {
			last = i
			m.Trainable = !lastOnly
		}
		msgs[i] = m
	}
	msgs[last].Trainable = true
	return msgs, engineTools(l.Tools), nil
}
