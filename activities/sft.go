package activities

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// sftLine is one line of SFT training data.
type sftLine struct {
	Messages []trainyard.Message `json:"messages"`
	Tools    []trainyard.Tool    `json:"tools"`
}

// prepareSFT reads the JSONL training data, renders every conversation with
// loss on its assistant turns (all, or the last one), and lays out
// epochs × batches, one gradient step per batch.
func (a *Activities) prepareSFT(ctx context.Context, job *trainyard.Job, model *trainyard.Model, cfg JobConfig, base *engine.Base) (*plan, int, error) {
	settings, errs := ParseSFTConfig(cfg.Config, cfg.ExperimentalConfig)
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
		bs = AutoBatchSize(n)
	}
	bs = min(bs, n)
	perEpoch := (n + bs - 1) / bs
	total := perEpoch * settings.Epochs
	if settings.LearningRates == nil {
		settings.LearningRates = []float64{defaultLearningRate(base, trainyard.JobKindSFT)}
	}
	rates, err := settings.stepLearningRates(total)
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
// other line must pass ParseSFTLine and render within the model's context.
func parseSFTData(data []byte, base *engine.Base, lastOnly bool) ([]engine.Sequence, error) {
	var seqs []engine.Sequence
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		msgs, tools, err := ParseSFTLine(line, lastOnly)
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

// ParseSFTLine checks one line of SFT data in everything that does not
// depend on the model ({"messages": [...], "tools": [...]?}, known roles, an
// assistant message to train on, tool-call arguments that are JSON objects)
// and converts it; lastOnly trains on the last assistant turn only. The
// upload route checks lines with it, so an upload holds nothing Prepare
// would refuse but a conversation too long for a model. The error reads
// after "line N".
func ParseSFTLine(line []byte, lastOnly bool) ([]engine.Message, []engine.Tool, error) {
	var l sftLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, nil, fmt.Errorf(" is not a JSON object with \"messages\": %v", err)
	}
	if len(l.Messages) == 0 {
		return nil, nil, fmt.Errorf(" has no messages")
	}
	msgs := make([]engine.Message, len(l.Messages))
	last := -1
	for i := range l.Messages {
		m, err := engineMessage(&l.Messages[i])
		if err != nil {
			return nil, nil, fmt.Errorf(", messages[%d]: %v", i, err)
		}
		for _, c := range m.ToolCalls {
			if !isJSONObject(c.Arguments) {
				return nil, nil, fmt.Errorf(", messages[%d]: tool call %q: arguments must be a JSON object encoded as a string", i, c.Name)
			}
		}
		if m.Role == "assistant" {
			last = i
			m.Trainable = !lastOnly
		}
		msgs[i] = m
	}
	if last < 0 {
		return nil, nil, fmt.Errorf(" has no assistant message to train on")
	}
	for i, t := range l.Tools {
		if t.Type != "function" || !toolName.MatchString(t.Function.Name) {
			return nil, nil, fmt.Errorf(", tools[%d]: a tool must be {\"type\": \"function\", \"function\": {\"name\": ...}} "+
				"with a name of 1 to 64 letters, digits, '_' or '-'", i)
		}
	}
	msgs[last].Trainable = true
	return msgs, engineTools(l.Tools), nil
}

// toolName is OpenAI's rule for function names, which chat requests follow
// too.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// isJSONObject reports whether s is a JSON object (blank counts as {}, as
// the chat template treats it).
func isJSONObject(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return true
	}
	var v map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &v) == nil && v != nil
}
