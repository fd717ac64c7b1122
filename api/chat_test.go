package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/serving/servingtest"
)

// chatEnv is an API server with chat completions on a real HTTP listener, and an OpenAI SDK client
// holding team-a's key.
type chatEnv struct {
	*env
	url    string
	client openai.Client
	chat   *serving.Service
}

func newChatEnv(t *testing.T, cfg serving.Config) *chatEnv {
	t.Helper()
	cfg.OpenBase = servingtest.OpenBase
	var chat *serving.Service
	e := newEnv(t, func(_ *api.Config, d *api.Deps) {
		chat = serving.New(cfg, d.Models, d.Blobs, d.Logger)
		d.Chat = chat
	})
	ts := httptest.NewServer(e.srv.Handler())
	t.Cleanup(ts.Close)
	return &chatEnv{env: e, url: ts.URL, client: sdkClient(ts.URL, e.key), chat: chat}
}

func sdkClient(url, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// params is a small request to the built-in model; tests adjust it.
func params(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are terse."),
			openai.UserMessage("Say the magic words."),
		},
		MaxTokens: openai.Int(16), Seed: openai.Int(3), Temperature: openai.Float(1),
	}
}

func tokensOf(c openai.ChatCompletionChoice) []string {
	out := make([]string, len(c.Logprobs.Content))
	for i, lp := range c.Logprobs.Content {
		out[i] = lp.Token
	}
	return out
}

// statusOf returns the HTTP status of an SDK error, 0 for success or a non-API error.
func sdkStatus(err error) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

func TestChatCompletionWithTheOpenAISDK(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{})
	p := params(servingtest.BaseModel)
	p.N, p.Logprobs, p.TopLogprobs = openai.Int(3), openai.Bool(true), openai.Int(2)
	res, err := e.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.ID, "chatcmpl-") || res.Object != "chat.completion" || res.Model != servingtest.BaseModel || res.Created == 0 {
		t.Fatalf("envelope: id %q object %q model %q created %d", res.ID, res.Object, res.Model, res.Created)
	}
	if len(res.Choices) != 3 {
		t.Fatalf("%d choices, want 3", len(res.Choices))
	}
	total := 0
	for i, c := range res.Choices {
		if int(c.Index) != i || c.Message.Role != "assistant" || (c.FinishReason != "stop" && c.FinishReason != "length") {
			t.Fatalf("choice %d: index %d role %q finish %q", i, c.Index, c.Message.Role, c.FinishReason)
		}
		for _, lp := range c.Logprobs.Content {
			if !strings.HasPrefix(lp.Token, "token_id:") || lp.Logprob > 0 || len(lp.Bytes) == 0 || len(lp.TopLogprobs) != 2 {
				t.Fatalf("choice %d logprob %+v", i, lp)
			}
		}
		total += len(c.Logprobs.Content)
	}
	u := res.Usage
	if u.PromptTokens == 0 || int(u.CompletionTokens) != total || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v for %d sampled tokens", u, total)
	}

	// Logprobs come back even unasked (with empty top_logprobs), and the answer matches the document.
	raw := e.call("POST", "/v1/chat/completions/", map[string]any{"model": servingtest.BaseModel, "max_tokens": 4,
		"messages":        []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
		"some_vllm_extra": true})
	mustStatus(t, raw, http.StatusOK)
	var body struct {
		Choices []struct {
			Logprobs struct {
				Content []struct {
					TopLogprobs []any `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw.Body, &body); err != nil || len(body.Choices) != 1 || len(body.Choices[0].Logprobs.Content) == 0 {
		t.Fatalf("unasked logprobs: %v %s", err, raw.Body)
	}
	if tops := body.Choices[0].Logprobs.Content[0].TopLogprobs; tops == nil || len(tops) != 0 {
		t.Fatalf("top_logprobs %v, want []", tops)
	}
}

func TestChatStreamingMatchesNonStreaming(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{})
	ctx := context.Background()
	p := params(servingtest.BaseModel)
	p.N, p.MaxTokens = openai.Int(2), openai.Int(24)
	want, err := e.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := e.client.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	chunks, roles := 0, 0
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Object != "chat.completion.chunk" || chunk.ID == "" || chunk.Model != servingtest.BaseModel {
			t.Fatalf("chunk envelope %+v", chunk)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Role == "assistant" {
				roles++
			}
		}
		acc.AddChunk(chunk)
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if roles != 2 || chunks < 6 {
		t.Fatalf("%d role chunks in %d chunks", roles, chunks)
	}
	got := acc.ChatCompletion
	if len(got.Choices) != 2 || got.Usage.TotalTokens != want.Usage.TotalTokens {
		t.Fatalf("streamed %d choices, usage %+v; non-streamed usage %+v", len(got.Choices), got.Usage, want.Usage)
	}
	for i := range want.Choices {
		w, g := want.Choices[i], got.Choices[i]
		if g.Message.Content != w.Message.Content || g.FinishReason != w.FinishReason || !slices.Equal(tokensOf(g), tokensOf(w)) {
			t.Fatalf("choice %d: streamed %q (%s, %d tokens), non-streamed %q (%s, %d tokens)", i,
				g.Message.Content, g.FinishReason, len(g.Logprobs.Content), w.Message.Content, w.FinishReason, len(w.Logprobs.Content))
		}
	}
}

func TestChatSeedDeterminismAndStop(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{})
	ctx := context.Background()
	p := params(servingtest.BaseModel)
	p.MaxTokens = openai.Int(24)
	a, err := e.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tokensOf(a.Choices[0]), tokensOf(b.Choices[0])) {
		t.Fatal("the same seed sampled different tokens")
	}
	p.Seed = openai.Int(4)
	c, err := e.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(tokensOf(a.Choices[0]), tokensOf(c.Choices[0])) {
		t.Fatal("another seed sampled the same tokens")
	}

	// Stop on a printable byte the seed samples: the same seed ends just before it.
	p.Seed = openai.Int(3)
	cut := -1
	for i, lp := range a.Choices[0].Logprobs.Content {
		if i > 0 && len(lp.Bytes) == 1 && lp.Bytes[0] >= ' ' && lp.Bytes[0] < 0x7f {
			cut = i
			break
		}
	}
	if cut < 0 {
		t.Fatal("no printable ASCII byte sampled; pick another seed")
	}
	p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{string(rune(a.Choices[0].Logprobs.Content[cut].Bytes[0])), "\x00never"}}
	s, err := e.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Choices[0].FinishReason != "stop" || len(s.Choices[0].Logprobs.Content) != cut {
		t.Fatalf("stopped after %d tokens (%s), want %d (stop)", len(s.Choices[0].Logprobs.Content), s.Choices[0].FinishReason, cut)
	}
}

// TestChatServesTrainedCheckpoints samples a model created through the API, before and after a checkpoint
// made by a real SFT step; under the same seed the checkpoint answers differently from the base model.
func TestChatServesTrainedCheckpoints(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{})
	ctx := context.Background()
	id := e.createModel("agent")
	m, err := e.db.FindModel(ctx, e.acct.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	p := params(servingtest.BaseModel)
	p.Temperature = openai.Float(0)
	sample := func(model string) []string {
		t.Helper()
		p.Model = model
		res, err := e.client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if res.Model != model {
			t.Fatalf("response model %q, want %q", res.Model, model)
		}
		return tokensOf(res.Choices[0])
	}
	base := sample(servingtest.BaseModel)
	name := "wandb-artifact:///team-a/proj/agent"
	if got := sample(name); !slices.Equal(got, base) {
		t.Fatal("a model without checkpoints must answer like its base model")
	}
	servingtest.TrainCheckpoint(t, e.db, e.blobs, m, 1, nil)
	for _, n := range []string{name, name + ":step1"} {
		if got := sample(n); slices.Equal(got, base) {
			t.Fatalf("%s samples exactly like the base model after a training step", n)
		}
	}
	// Another account cannot see it.
	other := sdkClient(e.url, e.otherKey)
	_, err = other.Chat.Completions.New(ctx, params(name))
	if sdkStatus(err) != http.StatusNotFound {
		t.Fatalf("team-b asking for team-a's model: %v, want 404", err)
	}
}
