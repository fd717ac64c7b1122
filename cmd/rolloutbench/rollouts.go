package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// rollout is one chat completion of a group: a request with n = 1, streamed.
type rollout struct {
	status  int           // HTTP status; 0 when the request failed before one came
	err     error         // transport failure, an error event in the stream, or a non-200 answer
	latency time.Duration // request sent → [DONE]
	ttft    time.Duration // request sent → first token (queue wait and prefill included)
	// interval is the mean time between this rollout's tokens after its first: the decoding steps it
	// took part in, each shared with the rest of the batch.
	interval time.Duration
	usage    usage
}

// usage is the usage object of the stream's last chunk.
type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u usage) cached() int {
	if u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// prompt is one group's conversation: a system prompt and a user question.
type prompt struct{ system, user string }

// client sends the rollouts of one run.
type client struct {
	http      *http.Client
	api, key  string
	model     string
	maxTokens int
}

func newClient(api, key, model string, maxTokens, conns int) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.DisableCompression = conns, conns, true
	return &client{http: &http.Client{Transport: tr}, api: api, key: key, model: model, maxTokens: maxTokens}
}

// runGroups sends every prompt n times, all at once (each request waits for one start signal), and returns
// the rollouts, group by group, and the wall time from the start signal to the last answer.
func (c *client) runGroups(ctx context.Context, prompts []prompt, n int) ([]rollout, time.Duration) {
	out := make([]rollout, len(prompts)*n)
	bodies := make([][]byte, len(prompts))
	for i, p := range prompts {
		bodies[i] = c.body(p, c.maxTokens)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = c.send(ctx, bodies[i/n])
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	return out, time.Since(t0)
}

// body is a rollout request as an RL client sends it (n = 1, temperature 1, the sampled tokens' logprobs),
// with ignore_eos so that every rollout is maxTokens long, streamed with usage for the per-token timing.
func (c *client) body(p prompt, maxTokens int) []byte {
	b, _ := json.Marshal(map[string]any{
		"model": c.model,
		"messages": []map[string]string{
			{"role": "system", "content": p.system},
			{"role": "user", "content": p.user},
		},
		"max_tokens": maxTokens, "temperature": 1, "logprobs": true, "ignore_eos": true,
		"stream": true, "stream_options": map[string]bool{"include_usage": true},
	})
	return b
}

// tokenMark occurs once per sampled token in a chunk's logprobs (top_logprobs is not asked for, so each
// entry's list is empty): counting it counts tokens without decoding every chunk.
var tokenMark = []byte(`"top_logprobs":`)

func (c *client) send(ctx context.Context, body []byte) (r rollout) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		r.err = err
		return r
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	defer func() { r.latency = time.Since(start) }()
	resp, err := c.http.Do(req)
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		r.err = fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
		return r
	}
	var first, last time.Duration
	tokens, firstTokens := 0, 0
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			data = bytes.TrimSpace(data)
			switch {
			case bytes.Equal(data, []byte("[DONE]")):
				if tokens > firstTokens {
					r.interval = (last - first) / time.Duration(tokens-firstTokens)
				}
				return r
			case bytes.HasPrefix(data, []byte(`{"error"`)):
				r.err = fmt.Errorf("error event: %s", data)
				return r
			case bytes.Contains(data, []byte(`"usage":{`)):
				var u struct{ Usage usage }
				if err := json.Unmarshal(data, &u); err != nil {
					r.err = fmt.Errorf("usage chunk: %w", err)
					return r
				}
				r.usage = u.Usage
			}
			if k := bytes.Count(data, tokenMark); k > 0 {
				now := time.Since(start)
				if tokens == 0 {
					first, firstTokens, r.ttft = now, k, now
				}
				last, tokens = now, tokens+k
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the stream ended without [DONE]
			}
			r.err = fmt.Errorf("read stream: %w", err)
			return r
		}
	}
}

// complete sends one short request (not streamed) and waits for its answer: the warm-up that loads a base
// model before it is measured.
func (c *client) complete(ctx context.Context, p prompt, maxTokens int) error {
	var m map[string]any
	_ = json.Unmarshal(c.body(p, maxTokens), &m)
	delete(m, "stream")
	delete(m, "stream_options")
	body, _ := json.Marshal(m)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("warm-up request: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
