package serving_test

import (
	"context"
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

// TestQueueInsteadOfRefusal: past the batch's room a request waits and is admitted when a generation
// closes; only past a full queue is it refused, with the hosted service's message.
func TestQueueInsteadOfRefusal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{Concurrency: 1, QueueLength: 1})
	ctx := context.Background()
	g, err := e.svc.Start(ctx, e.request(servingtest.BaseModel))
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() {
		g, err := e.svc.Start(ctx, e.request(servingtest.BaseModel))
		if err == nil {
			g.Close()
		}
		queued <- err
	}()
	for e.svc.Queued() != 1 {
		time.Sleep(time.Millisecond)
	}
	_, err = e.svc.Start(ctx, e.request(servingtest.BaseModel))
	wantCode(t, err, trainyard.ELIMIT)
	if msg := trainyard.ErrorMessage(err); msg != serving.ConcurrencyLimitMessage {
		t.Fatalf("message %q", msg)
	}
	g.Close()
	if err := <-queued; err != nil {
		t.Fatalf("the queued request after Close: %v", err)
	}
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
