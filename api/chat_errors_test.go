package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/serving/servingtest"
)

func TestChatErrorsThroughTheSDK(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{})
	ctx := context.Background()
	cases := []struct {
		name   string
		client openai.Client
		params openai.ChatCompletionNewParams
		status int
	}{
		{"no key", sdkClient(e.url, ""), params(servingtest.BaseModel), http.StatusUnauthorized},
		{"bad key", sdkClient(e.url, "not-a-key"), params(servingtest.BaseModel), http.StatusUnauthorized},
		{"unknown model", e.client, params("wandb-artifact:///team-a/proj/missing"), http.StatusNotFound},
		{"unknown base model", e.client, params("gpt-4o"), http.StatusNotFound},
		{"temperature out of range", e.client, func() openai.ChatCompletionNewParams {
			p := params(servingtest.BaseModel)
			p.Temperature = openai.Float(2.5)
			return p
		}(), http.StatusUnprocessableEntity},
		{"context overflow", e.client, func() openai.ChatCompletionNewParams {
			p := params(servingtest.BaseModel)
			p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("many words ", 200))}
			return p
		}(), http.StatusBadRequest},
	}
	for _, c := range cases {
		_, err := c.client.Chat.Completions.New(ctx, c.params)
		if got := sdkStatus(err); got != c.status {
			t.Errorf("%s: %v (status %d), want %d", c.name, err, got, c.status)
		}
	}
}

// TestChatValidationErrors checks the FastAPI-shaped 422 bodies (the env checks them against the
// document) and their locations.
func TestChatValidationErrors(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{MaxChoices: 4})
	user := map[string]any{"role": "user", "content": "hi"}
	cases := []struct {
		name string
		body map[string]any
		want []string
	}{
		{"missing messages", map[string]any{"model": servingtest.BaseModel}, []string{`["body","messages"] missing`}},
		{"empty messages", map[string]any{"messages": []any{}}, []string{`["body","messages"] too_short`}},
		{"ranges", map[string]any{"messages": []any{user}, "temperature": -1, "top_p": 0, "n": 5, "top_logprobs": 21,
			"max_tokens": 0, "max_completion_tokens": -3, "top_k": -2},
			[]string{`["body","temperature"] greater_than_equal`, `["body","top_p"] greater_than`, `["body","top_k"] greater_than_equal`,
				`["body","n"] less_than_equal`, `["body","max_tokens"] greater_than_equal`,
				`["body","max_completion_tokens"] greater_than_equal`, `["body","top_logprobs"] less_than_equal`}},
		{"stop", map[string]any{"messages": []any{user}, "stop": []any{"a", "b", "c", "d", "e"}}, []string{`["body","stop"] too_long`}},
		{"empty stop", map[string]any{"messages": []any{user}, "stop": ""}, []string{`["body","stop"] string_too_short`}},
		{"roles and parts", map[string]any{"messages": []any{
			map[string]any{"role": "robot", "content": "x"},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "http://x"}}}},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c", "type": "function",
				"function": map[string]any{"name": "f", "arguments": "[1]"}}}},
		}}, []string{`["body","messages",0,"role"] literal_error`, `["body","messages",1,"content",0,"type"] value_error`,
			`["body","messages",2,"tool_calls",0,"function","arguments"] value_error`}},
		{"tools", map[string]any{"messages": []any{user}, "tools": []any{map[string]any{"type": "function",
			"function": map[string]any{"name": "bad name!"}}}, "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "other"}}},
			[]string{`["body","tools",0,"function","name"] string_pattern_mismatch`, `["body","tool_choice","function","name"] value_error`}},
		{"tool choice without tools", map[string]any{"messages": []any{user}, "tool_choice": "required"}, []string{`["body","tool_choice"] value_error`}},
		{"response format", map[string]any{"messages": []any{user}, "response_format": map[string]any{"type": "json_schema"}},
			[]string{`["body","response_format","type"] literal_error`}},
	}
	for _, c := range cases {
		res := e.call("POST", "/v1/chat/completions", c.body)
		got := locs(t, res.Errors(t))
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestChatQueueAndCancellation holds the only slot with a stream that cannot end soon (four completions to
// the end of the context, ignore_eos): a second request waits in the queue, a third (queue full) gets the
// hosted 429 with Retry-After, a fourth that hangs up while queued leaves the queue; then the stream hangs
// up, the handler sees the cancellation, and the queued request is answered.
func TestChatQueueAndCancellation(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{Concurrency: 1, QueueLength: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"model":"` + servingtest.BaseModel + `","stream":true,"ignore_eos":true,"n":4,"messages":[{"role":"user","content":"Go on forever."}]}`
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first event %q: %v", line, err)
	}

	short := map[string]any{"model": servingtest.BaseModel, "max_tokens": 2, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	// A request whose client hangs up while it waits leaves the queue.
	gone, hangUp := context.WithCancel(context.Background())
	goneDone := make(chan struct{})
	go func() {
		defer close(goneDone)
		raw, _ := json.Marshal(short)
		req, _ := http.NewRequestWithContext(gone, "POST", e.url+"/v1/chat/completions", bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+e.key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitQueued(t, e, 1)
	hangUp()
	<-goneDone
	waitQueued(t, e, 0)

	answered := make(chan result, 1)
	go func() { answered <- e.call("POST", "/v1/chat/completions", short) }()
	waitQueued(t, e, 1)
	res := e.call("POST", "/v1/chat/completions", short)
	mustStatus(t, res, http.StatusTooManyRequests)
	if got := res.JSON(t)["detail"]; got != "Concurrency limit reached for requests" {
		t.Fatalf("429 detail %q", got)
	}
	if res.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}

	cancel()
	resp.Body.Close()
	mustStatus(t, <-answered, http.StatusOK)
	// The slot came back because sampling stopped on the hang-up, not because it ran out.
	if n := e.logs.FilterMessage("chat stream: client went away").Len(); n != 1 {
		t.Fatalf("%d 'client went away' logs, want 1", n)
	}
}

// TestChatFairShare: one account floods with 32 concurrent clients, each sending its next request as soon
// as the last is answered; another account's requests, one at a time, are all served, and so is every
// request of the flood (they queue, none is refused): the queue takes turns between the accounts.
func TestChatFairShare(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{Concurrency: 8})
	ask := func(ctx context.Context, key string) int {
		body := `{"model":"` + servingtest.BaseModel + `","max_tokens":24,"ignore_eos":true,"messages":[{"role":"user","content":"Talk."}]}`
		req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	ctx, stop := context.WithCancel(context.Background())
	var hogged, refused atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for ctx.Err() == nil {
				switch code := ask(ctx, e.key); code {
				case http.StatusOK:
					hogged.Add(1)
				case 0: // stopped
				default:
					refused.Add(1)
				}
			}
		})
	}
	for e.chat.Queued() == 0 { // the flood fills the batch and queues
		time.Sleep(time.Millisecond)
	}
	served := 0
	for range 30 {
		if code := ask(context.Background(), e.otherKey); code == http.StatusOK {
			served++
		} else {
			t.Errorf("second account: status %d", code)
		}
	}
	stop()
	wg.Wait()
	if served != 30 || refused.Load() != 0 {
		t.Fatalf("second account served %d of 30 while the first had %d answers and %d refusals", served, hogged.Load(), refused.Load())
	}
	t.Logf("second account: %d/30 served; first account: %d served, %d refused", served, hogged.Load(), refused.Load())
}

// waitQueued waits until n chat requests wait in the admission queue.
func waitQueued(t *testing.T, e *chatEnv, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.chat.Queued() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", e.chat.Queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestChatManyAtOnce: one client sends 256 requests at once with the default settings, as an RL client
// sends its rollouts: every one is answered, none refused.
func TestChatManyAtOnce(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{})
	body := `{"model":"` + servingtest.BaseModel + `","max_tokens":4,"messages":[{"role":"user","content":"Name a planet."}]}`
	codes := make(chan int, 256)
	var wg sync.WaitGroup
	for range 256 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	counts := map[int]int{}
	for c := range codes {
		counts[c]++
	}
	if counts[http.StatusOK] != 256 {
		t.Fatalf("statuses %v, want 256 × 200", counts)
	}
}

// TestChatGroupSharesItsPrompt: the rollouts of a group, sent at once as separate requests, prefill their
// prompt once: every request but the one that prefilled it reports the whole prompt in
// usage.prompt_tokens_details.cached_tokens.
func TestChatGroupSharesItsPrompt(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{})
	// The built-in base is shared by the tests of this process: a prompt of its own keeps the count exact.
	body := fmt.Sprintf(`{"model":"%s","max_tokens":4,"temperature":1,"logprobs":true,"messages":[{"role":"user","content":"Rollout group %d: name a planet."}]}`,
		servingtest.BaseModel, time.Now().UnixNano())
	const group = 8
	type answer struct {
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	answers := make(chan answer, group)
	var wg sync.WaitGroup
	for range group {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var a answer
			if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("status %d: %v", resp.StatusCode, err)
			}
			answers <- a
		})
	}
	wg.Wait()
	close(answers)
	// One request prefills the prompt; every other one reads all of it from the cache. (The one that
	// prefills may find a start of it cached too, from an earlier request with the same opening: the chat
	// template's, or this test's own in an earlier run of the same process.)
	var cached []int
	prompt := 0
	for a := range answers {
		cached = append(cached, a.Usage.PromptTokensDetails.CachedTokens)
		prompt = a.Usage.PromptTokens
	}
	slices.Sort(cached)
	if prompt == 0 || len(cached) != group || cached[0] >= prompt || cached[1] != prompt || cached[group-1] != prompt {
		t.Fatalf("cached prompt tokens per request %v of %d: want one request to prefill the prompt and the other %d to read all of it", cached, prompt, group-1)
	}
}
