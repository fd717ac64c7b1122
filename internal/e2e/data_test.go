package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/testutil/enginetest"
)

// base returns the shared tiny-chat base model.
func base(t testing.TB) *engine.Base {
	t.Helper()
	b, err := sharedBases.Base(context.Background(), baseModel)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rlData is an RL request body built the way a client builds one: groups
// of completions sampled from the model (each Choice with "token_id:<id>"
// logprobs), rewarded by how often they say 'e'. best are the rendered
// sequences of the best completion of every group.
type rlData struct {
	groups []map[string]any
	best   []engine.Sequence
}

func sampleRL(t testing.TB, groups, perGroup int, seed int64) rlData {
	t.Helper()
	b := base(t)
	var d rlData
	prompts := []string{"Tell me about the sea.", "Name a color.", "Say hello.", "What do cats eat?"}
	for g := range groups {
		msgs := []engine.Message{{Role: "user", Content: prompts[g%len(prompts)]}}
		prompt, err := b.RenderPrompt(msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		comps, err := b.Sample(context.Background(), nil, prompt,
			engine.SampleParams{Temperature: 1, Seed: seed + int64(g), MaxTokens: 24, N: perGroup}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var trajs []map[string]any
		bestReward, bestSeq := -1.0, engine.Sequence{}
		for i, c := range comps {
			ids := make([]int, len(c.Tokens))
			for k, tok := range c.Tokens {
				ids[k] = tok.ID
			}
			// Distinct rewards within the group, so every group carries signal.
			reward := float64(strings.Count(c.Text, "e")) + float64(i)/100
			trajs = append(trajs, map[string]any{
				"messages_and_choices": []any{
					map[string]any{"role": "user", "content": msgs[0].Content},
					enginetest.Choice(c),
				},
				"reward": reward,
			})
			if reward > bestReward {
				seq, err := b.RenderTraining(append(msgs, engine.Message{Role: "assistant", Tokens: ids, Trainable: true}), nil)
				if err != nil {
					t.Fatal(err)
				}
				bestReward, bestSeq = reward, seq
			}
		}
		d.groups = append(d.groups, map[string]any{"trajectories": trajs})
		d.best = append(d.best, bestSeq)
	}
	return d
}

// body is the CreateTrainingJob request.
func (d rlData) body(modelID string, lr float64) map[string]any {
	return map[string]any{"model_id": modelID, "trajectory_groups": d.groups,
		"experimental_config": map[string]any{"learning_rate": lr, "loss_fn": "cispo", "precalculate_logprobs": nil}}
}

// sftJSONL is n short arithmetic conversations.
func sftJSONL(n int) []byte {
	var buf bytes.Buffer
	for i := range n {
		js, _ := json.Marshal(map[string]any{"messages": []map[string]any{
			{"role": "system", "content": "Reply with the sum only."},
			{"role": "user", "content": fmt.Sprintf("%d+%d", i, i+2)},
			{"role": "assistant", "content": fmt.Sprint(2*i + 2)},
		}})
		buf.Write(js)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// sftSequences renders the conversations of sftJSONL for evaluation.
func sftSequences(t testing.TB, n int) []engine.Sequence {
	t.Helper()
	b := base(t)
	var out []engine.Sequence
	for i := range n {
		seq, err := b.RenderTraining([]engine.Message{
			{Role: "system", Content: "Reply with the sum only."},
			{Role: "user", Content: fmt.Sprintf("%d+%d", i, i+2)},
			{Role: "assistant", Content: fmt.Sprint(2*i + 2), Trainable: true},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seq)
	}
	return out
}

// adapterAt loads the adapter of a checkpoint from S3.
func (s *stack) adapterAt(modelID string, step int) *engine.Adapter {
	s.t.Helper()
	ad, err := base(s.t).LoadAdapter(bytes.NewReader(s.checkpointFile(modelID, step, trainyard.AdapterWeightsFile)),
		s.checkpointFile(modelID, step, trainyard.AdapterConfigFile))
	if err != nil {
		s.t.Fatal(err)
	}
	return ad
}
