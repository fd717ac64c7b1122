package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/trainyard/trainyard/examples/trainingapi"
)

// trajectory is one scored conversation. The assistant turn is the Choice
// exactly as /v1/chat/completions returned it: its logprobs (tokens written
// as token_id:<id>) tell the trainer which tokens were sampled and how
// likely they were.
type trajectory struct {
	MessagesAndChoices []json.RawMessage  `json:"messages_and_choices"`
	Reward             float64            `json:"reward"`
	Metrics            map[string]float64 `json:"metrics"`
	Metadata           map[string]any     `json:"metadata"`
}

// trajectoryGroup holds the samples of one prompt: the trainer compares
// each one's reward with the group's mean.
type trajectoryGroup struct {
	Trajectories []trajectory `json:"trajectories"`
}

// sampling says how rollouts are drawn.
type sampling struct {
	Model       string // wandb-artifact:///ENTITY/PROJECT/NAME:stepN
	N           int    // completions per prompt (the group size)
	Temperature float64
	MaxTokens   int
	Concurrency int // chat requests in flight
}

// rollout asks the model each question n times (one request with n
// completions per question, seeded so a rerun samples the same) and scores
// every answer. It returns one group per question and the mean reward.
func rollout(ctx context.Context, c *trainingapi.Client, s sampling, probs []problem, seed int64) ([]trajectoryGroup, float64, error) {
	groups := make([]trajectoryGroup, len(probs))
	errs := make([]error, len(probs))
	sem := make(chan struct{}, max(1, s.Concurrency))
	var wg sync.WaitGroup
	for i, p := range probs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			groups[i], errs[i] = sampleGroup(ctx, c, s, p, seed+int64(i))
		}()
	}
	wg.Wait()
	var sum float64
	var n int
	for i := range groups {
		if errs[i] != nil {
			return nil, 0, errs[i]
		}
		for _, t := range groups[i].Trajectories {
			sum += t.Reward
			n++
		}
	}
	return groups, sum / float64(max(n, 1)), nil
}

// sampleGroup samples and scores one question's group.
func sampleGroup(ctx context.Context, c *trainingapi.Client, s sampling, p problem, seed int64) (trajectoryGroup, error) {
	user := map[string]any{"role": "user", "content": p.Question}
	req := map[string]any{
		"model":       s.Model,
		"messages":    []any{user},
		"n":           s.N,
		"temperature": s.Temperature,
		"max_tokens":  s.MaxTokens,
		"seed":        seed,
		"logprobs":    true,
	}
	var resp struct {
		Choices []json.RawMessage `json:"choices"`
	}
	if err := c.Do(ctx, http.MethodPost, "/chat/completions", req, &resp); err != nil {
		return trajectoryGroup{}, err
	}
	if len(resp.Choices) != s.N {
		return trajectoryGroup{}, fmt.Errorf("asked for %d completions, got %d", s.N, len(resp.Choices))
	}
	userJSON, _ := json.Marshal(user)
	var g trajectoryGroup
	for _, raw := range resp.Choices {
		var choice struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(raw, &choice); err != nil {
			return trajectoryGroup{}, fmt.Errorf("decode a choice: %w", err)
		}
		r := p.reward(choice.Message.Content)
		g.Trajectories = append(g.Trajectories, trajectory{
			MessagesAndChoices: []json.RawMessage{userJSON, raw},
			Reward:             r,
			Metrics:            map[string]float64{"correct": r},
			Metadata:           map[string]any{"question": p.Question, "want": p.Want, "reply": choice.Message.Content},
		})
	}
	return g, nil
}
