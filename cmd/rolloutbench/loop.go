package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"sync"
	"time"
	"unicode"

	"github.com/trainyard/trainyard/examples/trainingapi"
)

// The loop mode (-loop, `make bench-loop`) times one ART-style RL iteration through the HTTP API, as a
// client such as OpenPipe ART runs it against the hosted service: G groups × N rollouts from the newest
// checkpoint, all sent at once; a deterministic reward; the groups logged; an RL job on them, followed
// through its events until training_ended; then the first chat on the checkpoint the job wrote.

// iteration is the wall time of each phase of one RL iteration, and the tokens behind the rates.
type iteration struct {
	shape string
	spec  groupSpec
	index int // 1 for the first iteration of a shape and G×N
	// rollouts: the G×N requests sent at once → the last answer; score: rewards computed and the groups
	// logged (POST …/log); train: the job submitted → its training_ended event, as the client sees it
	// (events polled every second); chat: the first chat on the new checkpoint, request → answer.
	rollouts, score, train, chat time.Duration
	completionTokens             int     // tokens sampled in the rollouts
	trainTokens                  int     // prompt + completion tokens of the trajectories trained on
	engineTrainTPS               float64 // the job's own tokens_per_second (its last gradient_step), 0 when absent
	// ratio and clipped are the job's first gradient step's mean_importance_ratio and clip_fraction: the
	// rollouts were sampled from the checkpoint that step starts from, so the ratio of the trainer's
	// probability of each sampled token to the sampler's is 1 but for their numerics (NaN when absent).
	ratio, clipped float64
	step           int     // the checkpoint step the iteration produced
	reward         float64 // mean reward of the rollouts
}

func (it iteration) total() time.Duration { return it.rollouts + it.score + it.train + it.chat }

// loopTrajectory and loopGroup are the wire shapes of POST …/log and /training-jobs: the user turn and
// the Choice exactly as /v1/chat/completions returned it (its logprobs say which tokens were sampled).
type loopTrajectory struct {
	MessagesAndChoices []json.RawMessage `json:"messages_and_choices"`
	Reward             float64           `json:"reward"`
}

type loopGroup struct {
	Trajectories []loopTrajectory `json:"trajectories"`
}

// reward is the benchmark's deterministic reward of a reply: the share of its characters that are letters.
// It varies from rollout to rollout of random weights, so every group carries a training signal.
func reward(reply string) float64 {
	letters, all := 0, 0
	for _, r := range reply {
		all++
		if unicode.IsLetter(r) {
			letters++
		}
	}
	if all == 0 {
		return 0
	}
	return float64(letters) / float64(all)
}

// runLoop runs o.iterations RL iterations for every shape and G×N against the service svc.
func runLoop(ctx context.Context, o options, svc *service) ([]iteration, error) {
	c := trainingapi.NewClient(svc.api+"/v1", svc.key)
	var out []iteration
	stamp := time.Now().UTC().Format("20060102-150405")
	for _, sh := range o.shapes {
		start := time.Now()
		warm := newClient(svc.api, svc.key, sh.modelName(), o.tokens, 1)
		if err := warm.complete(ctx, prompt{system: systemPrompt, user: "Warm-up: say hello."}, 4); err != nil {
			return nil, fmt.Errorf("%s: %w", sh.name, err)
		}
		progress("%s loaded and warmed up (%.0f s)", sh.name, time.Since(start).Seconds())
		for gi, g := range o.groups {
			m, err := c.RegisterModel(ctx, "loopbench", fmt.Sprintf("%s-%dx%d-%s", sh.name, g.groups, g.n, stamp), sh.modelName())
			if err != nil {
				return nil, fmt.Errorf("%s: register the model: %w", sh.name, err)
			}
			artifact := fmt.Sprintf("wandb-artifact:///%s/%s/%s", m.Entity, m.Project, m.Name)
			for i := 1; i <= o.iterations; i++ {
				it, err := runIteration(ctx, o, c, m.ID, artifact, groupPrompts(1000+gi*o.iterations+i, g.groups), g.n)
				if err != nil {
					return nil, fmt.Errorf("%s %s iteration %d: %w", sh.name, g, i, err)
				}
				it.shape, it.spec, it.index = sh.name, g, i
				progress("%s %s iteration %d: rollouts %.1f s, score+log %.1f s, train %.1f s, first chat %.1f s; %.1f s in all",
					sh.name, g, i, it.rollouts.Seconds(), it.score.Seconds(), it.train.Seconds(), it.chat.Seconds(), it.total().Seconds())
				out = append(out, it)
			}
		}
	}
	return out, nil
}

// runIteration is one iteration on the model modelID, served as artifact:stepN.
func runIteration(ctx context.Context, o options, c *trainingapi.Client, modelID, artifact string, prompts []prompt, n int) (iteration, error) {
	var it iteration
	step, err := c.NewestStep(ctx, modelID)
	if err != nil {
		return it, fmt.Errorf("newest checkpoint: %w", err)
	}
	model := fmt.Sprintf("%s:step%d", artifact, step)

	t0 := time.Now()
	choices, usages, err := sampleAll(ctx, c, model, prompts, n, o.tokens)
	if err != nil {
		return it, err
	}
	it.rollouts = time.Since(t0)

	t0 = time.Now()
	groups := make([]loopGroup, len(prompts))
	var sum float64
	for gi, p := range prompts {
		msgs, _ := json.Marshal([]map[string]string{{"role": "system", "content": p.system}, {"role": "user", "content": p.user}})
		var turns []json.RawMessage
		_ = json.Unmarshal(msgs, &turns)
		for j := range n {
			k := gi*n + j
			var ch struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			}
			if err := json.Unmarshal(choices[k], &ch); err != nil {
				return it, fmt.Errorf("decode a choice: %w", err)
			}
			r := reward(ch.Message.Content)
			sum += r
			groups[gi].Trajectories = append(groups[gi].Trajectories, loopTrajectory{
				MessagesAndChoices: append(append([]json.RawMessage(nil), turns...), choices[k]), Reward: r})
			it.completionTokens += usages[k].CompletionTokens
			it.trainTokens += usages[k].PromptTokens + usages[k].CompletionTokens
		}
	}
	it.reward = sum / float64(len(choices))
	if _, err := c.LogGroups(ctx, modelID, "train", groups); err != nil {
		return it, fmt.Errorf("log the groups: %w", err)
	}
	it.score = time.Since(t0)

	t0 = time.Now()
	var created struct {
		ID string `json:"id"`
	}
	err = c.Do(ctx, http.MethodPost, "/preview/training-jobs", map[string]any{
		"model_id": modelID, "trajectory_groups": groups,
		"experimental_config": map[string]any{"learning_rate": o.learningRate},
	}, &created)
	if err != nil {
		return it, fmt.Errorf("create the training job: %w", err)
	}
	steps, err := c.WaitForJob(ctx, created.ID, os.Stderr, "loss", "reward", "num_trainable_tokens", "tokens_per_second")
	if err != nil {
		return it, fmt.Errorf("training job %s: %w", created.ID, err)
	}
	it.train = time.Since(t0)
	it.ratio, it.clipped = math.NaN(), math.NaN()
	if len(steps) > 0 {
		it.engineTrainTPS, _ = steps[len(steps)-1]["tokens_per_second"].(float64)
		if r, ok := steps[0]["mean_importance_ratio"].(float64); ok {
			it.ratio = r
		}
		if c, ok := steps[0]["clip_fraction"].(float64); ok {
			it.clipped = c
		}
	}

	if it.step, err = c.NewestStep(ctx, modelID); err != nil {
		return it, fmt.Errorf("newest checkpoint: %w", err)
	}
	if it.step <= step {
		return it, fmt.Errorf("the job ended without a checkpoint after step %d", step)
	}
	t0 = time.Now()
	first := []prompt{{system: systemPrompt, user: "After training: say hello."}}
	if _, _, err := sampleAll(ctx, c, fmt.Sprintf("%s:step%d", artifact, it.step), first, 1, o.chatTokens); err != nil {
		return it, fmt.Errorf("first chat on step %d: %w", it.step, err)
	}
	it.chat = time.Since(t0)
	return it, nil
}

// sampleAll sends every prompt n times at once, each its own request (n = 1, temperature 1, logprobs,
// ignore_eos so every rollout is maxTokens long), and returns the choices and usages, group by group.
func sampleAll(ctx context.Context, c *trainingapi.Client, model string, prompts []prompt, n, maxTokens int) ([]json.RawMessage, []usage, error) {
	total := len(prompts) * n
	choices, usages, errs := make([]json.RawMessage, total), make([]usage, total), make([]error, total)
	var wg sync.WaitGroup
	for k := range total {
		p := prompts[k/n]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp struct {
				Choices []json.RawMessage `json:"choices"`
				Usage   usage             `json:"usage"`
			}
			errs[k] = c.Do(ctx, http.MethodPost, "/chat/completions", map[string]any{
				"model": model,
				"messages": []map[string]string{
					{"role": "system", "content": p.system}, {"role": "user", "content": p.user},
				},
				"max_tokens": maxTokens, "temperature": 1, "logprobs": true, "ignore_eos": true,
			}, &resp)
			if errs[k] == nil && len(resp.Choices) != 1 {
				errs[k] = fmt.Errorf("asked for 1 choice, got %d", len(resp.Choices))
			}
			if errs[k] == nil {
				choices[k], usages[k] = resp.Choices[0], resp.Usage
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("rollout: %w", err)
		}
	}
	return choices, usages, nil
}
