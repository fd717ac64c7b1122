package serving_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/serving/servingtest"
	"github.com/trainyard/trainyard/storage/postgres"
	"github.com/trainyard/trainyard/storage/s3"
)

// env is a Service over a real PostgreSQL schema and a real S3 bucket, with one account and one model.
type env struct {
	svc     *serving.Service
	db      *postgres.DB
	blobs   *s3.Store
	account *trainyard.Account
	model   *trainyard.Model
}

const modelName = "wandb-artifact:///acme/proj/agent"

func newEnv(t *testing.T, cfg serving.Config) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{db: pgtest.New(t), blobs: s3test.New(t)}
	var err error
	if e.account, err = e.db.CreateAccount(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	e.model = &trainyard.Model{AccountID: e.account.ID, Entity: "acme", Project: "proj", Name: "agent", BaseModel: servingtest.BaseModel}
	if err := e.db.CreateModel(ctx, e.model); err != nil {
		t.Fatal(err)
	}
	cfg.OpenBase = servingtest.OpenBase
	e.svc = serving.New(cfg, e.db, e.blobs, zaptest.NewLogger(t))
	return e
}

func seed(v int64) *int64 { return &v }

// request is a small sampling request; tests adjust it.
func (e *env) request(model string) serving.Request {
	return serving.Request{AccountID: e.account.ID, Model: model, N: 1, Temperature: 1, TopP: 1, MaxTokens: 12, Seed: seed(7),
		Messages: []trainyard.Message{{Role: "user", Content: trainyard.TextContent("Say the magic words.")}}}
}

// complete runs a request to the end, without streaming.
func (e *env) complete(t *testing.T, req serving.Request) *serving.Result {
	t.Helper()
	g, err := e.svc.Start(context.Background(), req)
	if err != nil {
		t.Fatalf("start %s: %v", req.Model, err)
	}
	defer g.Close()
	res, err := g.Run(context.Background(), nil)
	if err != nil {
		t.Fatalf("run %s: %v", req.Model, err)
	}
	return res
}

// tokenIDs lists the sampled tokens of a choice as its logprobs name them.
func tokenIDs(c trainyard.Choice) []string {
	ids := make([]string, len(c.Logprobs.Content))
	for i, lp := range c.Logprobs.Content {
		ids[i] = lp.Token
	}
	return ids
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if trainyard.ErrorCode(err) != code || trainyard.ErrorMessage(err) == "" {
		t.Fatalf("error %v, want code %s with a message", err, code)
	}
}

func TestBaseModelChoicesAreTrainable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.N, req.TopLogprobs = 3, 2
	res := e.complete(t, req)
	if len(res.Choices) != 3 || res.Usage.PromptTokens == 0 {
		t.Fatalf("%d choices, usage %+v", len(res.Choices), res.Usage)
	}
	total := 0
	for i, c := range res.Choices {
		if c.Index != i || c.Message.Role != "assistant" || (c.FinishReason != "stop" && c.FinishReason != "length") {
			t.Fatalf("choice %d: %+v", i, c)
		}
		for _, lp := range c.Logprobs.Content {
			if !strings.HasPrefix(lp.Token, "token_id:") || lp.Logprob > 0 || len(lp.Bytes) == 0 || len(lp.TopLogprobs) != 2 {
				t.Fatalf("choice %d logprob %+v", i, lp)
			}
		}
		total += len(c.Logprobs.Content)
	}
	if total != res.Usage.CompletionTokens {
		t.Fatalf("%d logprobs for %d completion tokens", total, res.Usage.CompletionTokens)
	}
}

func TestSeedDeterminism(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.N = 2
	a, b := e.complete(t, req), e.complete(t, req)
	req.Seed = seed(8)
	c := e.complete(t, req)
	for i := range a.Choices {
		if !slices.Equal(tokenIDs(a.Choices[i]), tokenIDs(b.Choices[i])) {
			t.Fatalf("choice %d differs between two runs with the same seed", i)
		}
	}
	if slices.Equal(tokenIDs(a.Choices[0]), tokenIDs(c.Choices[0])) {
		t.Fatal("another seed gave the same tokens")
	}
}

// TestTrainedCheckpointChangesSamples samples a checkpoint made by a real SFT step and compares it with the
// base model under the same seed; step 0 is the base model itself.
func TestTrainedCheckpointChangesSamples(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.Temperature = 0
	base := tokenIDs(e.complete(t, req).Choices[0])

	req.Model = modelName // no checkpoint yet: the base model answers
	if got := tokenIDs(e.complete(t, req).Choices[0]); !slices.Equal(got, base) {
		t.Fatal("an untrained model must sample like its base model")
	}
	servingtest.TrainCheckpoint(t, e.db, e.blobs, e.model, 1, nil)
	for _, name := range []string{modelName, modelName + ":latest", modelName + ":step1", "acme/proj/agent:step1"} {
		req.Model = name
		if got := tokenIDs(e.complete(t, req).Choices[0]); slices.Equal(got, base) {
			t.Fatalf("%s: the trained checkpoint samples exactly like the base model", name)
		}
	}
	req.Model = modelName + ":step0"
	if got := tokenIDs(e.complete(t, req).Choices[0]); !slices.Equal(got, base) {
		t.Fatal(":step0 must be the base model")
	}
}

// TestNewAndDeletedCheckpoints: latest follows the checkpoint rows as they are written and deleted, even
// though the adapters stay cached.
func TestNewAndDeletedCheckpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	ctx := context.Background()
	req := e.request(modelName)
	req.Temperature = 0
	a1, _ := servingtest.TrainCheckpoint(t, e.db, e.blobs, e.model, 1, nil)
	req.Model = modelName + ":step1"
	step1 := tokenIDs(e.complete(t, req).Choices[0])
	servingtest.TrainCheckpoint(t, e.db, e.blobs, e.model, 2, a1)
	req.Model = modelName + ":step2"
	step2 := tokenIDs(e.complete(t, req).Choices[0])
	if slices.Equal(step1, step2) {
		t.Fatal("steps 1 and 2 sample the same tokens; the test cannot tell them apart")
	}
	req.Model = modelName
	if got := tokenIDs(e.complete(t, req).Choices[0]); !slices.Equal(got, step2) {
		t.Fatal("latest must serve step 2 as soon as its row exists")
	}
	if _, _, err := e.db.DeleteCheckpoints(ctx, e.model.ID, []int{2}); err != nil {
		t.Fatal(err)
	}
	if got := tokenIDs(e.complete(t, req).Choices[0]); !slices.Equal(got, step1) {
		t.Fatal("after deleting step 2, latest must serve step 1")
	}
	req.Model = modelName + ":step2"
	_, err := e.svc.Start(ctx, req)
	wantCode(t, err, trainyard.ENOTFOUND)
}

func TestUnknownModelsAreNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	ctx := context.Background()
	other, err := e.db.CreateAccount(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	theirs := &trainyard.Model{AccountID: other.ID, Entity: "other", Project: "proj", Name: "secret", BaseModel: servingtest.BaseModel}
	if err := e.db.CreateModel(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"wandb-artifact:///other/proj/secret", "wandb-artifact:///acme/proj/missing",
		modelName + ":step3", "gpt-4o", modelName + ":v1"} {
		_, err := e.svc.Start(ctx, e.request(name))
		wantCode(t, err, trainyard.ENOTFOUND)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{Concurrency: 2, PerAccountConcurrency: 1})
	ctx := context.Background()
	g, err := e.svc.Start(ctx, e.request(servingtest.BaseModel))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Start(ctx, e.request(servingtest.BaseModel))
	wantCode(t, err, trainyard.ELIMIT)
	if msg := trainyard.ErrorMessage(err); msg != serving.ConcurrencyLimitMessage {
		t.Fatalf("message %q", msg)
	}
	g.Close()
	g, err = e.svc.Start(ctx, e.request(servingtest.BaseModel))
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	g.Close()
}

func TestContextOverflowIsABadRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.Messages[0].Content = trainyard.TextContent(strings.Repeat("long ", 400))
	_, err := e.svc.Start(context.Background(), req)
	wantCode(t, err, trainyard.EBADREQUEST)
	req = e.request(servingtest.BaseModel)
	req.MaxTokens = 5000
	_, err = e.svc.Start(context.Background(), req)
	wantCode(t, err, trainyard.EBADREQUEST)
	if !strings.Contains(trainyard.ErrorMessage(err), "maximum context length") {
		t.Fatalf("message %q", trainyard.ErrorMessage(err))
	}
}

func TestJSONObjectIsAlwaysValid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.JSONObject, req.N, req.MaxTokens = true, 4, 30
	for s := int64(0); s < 3; s++ {
		req.Seed = seed(s)
		for _, c := range e.complete(t, req).Choices {
			var v map[string]any
			if err := json.Unmarshal([]byte(c.Message.Content.Text()), &v); err != nil || c.FinishReason != "stop" {
				t.Fatalf("seed %d: content %q (%s) is not a JSON object: %v", s, c.Message.Content.Text(), c.FinishReason, err)
			}
		}
	}
	req.MaxTokens = 2
	_, err := e.svc.Start(context.Background(), req)
	wantCode(t, err, trainyard.EBADREQUEST)
}

func TestForcedToolCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.MaxTokens, req.N = 60, 2
	req.Tools = []trainyard.Tool{
		{Type: "function", Function: trainyard.FunctionDefinition{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		{Type: "function", Function: trainyard.FunctionDefinition{Name: "search"}},
	}
	for _, tc := range []serving.ToolChoice{{Mode: serving.ToolChoiceRequired}, {Mode: serving.ToolChoiceFunction, Name: "search"}} {
		req.ToolChoice = tc
		for _, c := range e.complete(t, req).Choices {
			if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
				t.Fatalf("%+v: choice %+v, want exactly one tool call", tc, c)
			}
			call := c.Message.ToolCalls[0]
			var args map[string]any
			if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
				t.Fatalf("arguments %q: %v", call.Function.Arguments, err)
			}
			if (tc.Name != "" && call.Function.Name != tc.Name) || (call.Function.Name != "get_weather" && call.Function.Name != "search") {
				t.Fatalf("%+v: called %q", tc, call.Function.Name)
			}
		}
	}
}

// TestStopSequence picks a printable byte the model samples under a seed and stops on it: the same seed then ends
// just before that byte, with finish_reason stop.
func TestStopSequence(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.MaxTokens = 24
	free := e.complete(t, req).Choices[0].Logprobs.Content
	cut := -1
	for i, lp := range free {
		if i > 0 && len(lp.Bytes) == 1 && lp.Bytes[0] >= ' ' && lp.Bytes[0] < 0x7f {
			cut = i
			break
		}
	}
	if cut < 0 {
		t.Fatalf("no printable ASCII byte among %d sampled tokens; pick another seed", len(free))
	}
	req.Stop = []string{string(rune(free[cut].Bytes[0])), "never-sampled"}
	got := e.complete(t, req).Choices[0]
	if got.FinishReason != "stop" || len(got.Logprobs.Content) != cut {
		t.Fatalf("stopped after %d tokens (%s), want %d (stop)", len(got.Logprobs.Content), got.FinishReason, cut)
	}
}

// TestStreamingMatchesAndCancels: deltas add up to the final choices, and an emit error or a cancelled
// context stops sampling early.
func TestStreamingMatchesAndCancels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.N, req.MaxTokens = 2, 40
	g, err := e.svc.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	lps := map[int]int{}
	finished := map[int]string{}
	res, err := g.Run(context.Background(), func(d serving.Delta) error {
		lps[d.Index] += len(d.Logprobs)
		if d.FinishReason != "" {
			finished[d.Index] = d.FinishReason
		}
		return nil
	})
	g.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range res.Choices {
		if lps[i] != len(c.Logprobs.Content) || finished[i] != c.FinishReason {
			t.Fatalf("choice %d: streamed %d logprobs and finish %q, final %d and %q", i, lps[i], finished[i], len(c.Logprobs.Content), c.FinishReason)
		}
	}

	gone := errors.New("client went away")
	g, _ = e.svc.Start(context.Background(), req)
	calls := 0
	_, err = g.Run(context.Background(), func(serving.Delta) error { calls++; return gone })
	g.Close()
	if !errors.Is(err, gone) || calls != 1 {
		t.Fatalf("emit error: err %v after %d calls, want the emit error after 1", err, calls)
	}

	req.MaxTokens = 0 // until the context is full: only cancellation ends this quickly
	g, _ = e.svc.Start(context.Background(), req)
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	_, err = g.Run(ctx, func(serving.Delta) error { cancel(); return nil })
	g.Close()
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled run: %v after %v", err, time.Since(start))
	}
}

func TestIgnoreEOSRunsToMaxTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.IgnoreEOS, req.N, req.MaxTokens = true, 3, 30
	res := e.complete(t, req)
	for _, c := range res.Choices {
		if c.FinishReason != "length" || len(c.Logprobs.Content) != 30 {
			t.Fatalf("choice %d: %d tokens (%s), want 30 (length)", c.Index, len(c.Logprobs.Content), c.FinishReason)
		}
	}
}
