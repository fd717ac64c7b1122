package serving_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/serving/servingtest"
)

// benchTokens is the completion length of every benchmark stream.
const benchTokens = 64

// BenchmarkServingStreams measures the serving layer alone (no HTTP) on the built-in base model: each
// iteration runs `streams` concurrent streaming generations of exactly benchTokens tokens (ignore_eos) and
// reports the mean
// time to first token, aggregate and per-stream tokens/s, and the process's peak RSS.
func BenchmarkServingStreams(b *testing.B) {
	db, blobs := pgtest.New(b), s3test.New(b)
	acct, err := db.CreateAccount(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	svc := serving.New(serving.Config{Concurrency: 16, OpenBase: servingtest.OpenBase}, db, blobs, nil)
	for _, streams := range []int{1, 8} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			servingtest.RunStreamBenchmark(b, streams, func(ctx context.Context, i int, firstToken func()) (int, error) {
				req := serving.Request{AccountID: acct.ID, Model: servingtest.BaseModel, N: 1, Temperature: 1, TopP: 1,
					MaxTokens: benchTokens, IgnoreEOS: true, Seed: seedOf(int64(i)),
					Messages: []trainyard.Message{{Role: "user", Content: trainyard.TextContent("Tell me a story about a fox.")}}}
				g, err := svc.Start(ctx, req)
				if err != nil {
					return 0, err
				}
				defer g.Close()
				var once sync.Once
				res, err := g.Run(ctx, func(serving.Delta) error { once.Do(firstToken); return nil })
				if err != nil {
					return 0, err
				}
				return res.Usage.CompletionTokens, nil
			})
		})
	}
}

func seedOf(v int64) *int64 { return &v }
