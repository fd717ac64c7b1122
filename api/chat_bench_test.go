package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/serving/servingtest"
)

// BenchmarkChatCompletionsStream measures streaming chat completions through the HTTP handler on the
// built-in base model (a real listener, SSE parsed by the client): each iteration runs `streams`
// concurrent requests of exactly 64 tokens (ignore_eos) and reports the mean time to the first token event, tokens/s and peak
// RSS. BenchmarkServingStreams in package serving is the same load without HTTP.
func BenchmarkChatCompletionsStream(b *testing.B) {
	e := newBenchEnv(b)
	for _, streams := range []int{1, 8} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			servingtest.RunStreamBenchmark(b, streams, func(ctx context.Context, i int, firstToken func()) (int, error) {
				return e.stream(ctx, i, firstToken)
			})
		})
	}
}

type benchEnv struct {
	url, key string
}

// newBenchEnv serves the API with chat completions over real PostgreSQL and S3 on a local listener.
func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	ctx := context.Background()
	db, blobs := pgtest.New(b), s3test.New(b)
	acct, err := db.CreateAccount(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	key, _, err := db.CreateAPIKey(ctx, acct.ID, "")
	if err != nil {
		b.Fatal(err)
	}
	chat := serving.New(serving.Config{Concurrency: 16, OpenBase: servingtest.OpenBase}, db, blobs, nil)
	srv := api.New(api.Config{}, api.Deps{Accounts: db, Models: db, Blobs: blobs, Chat: chat})
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	return &benchEnv{url: ts.URL, key: key}
}

// stream sends one streaming request and counts the logprob entries (one per token) of its events.
func (e *benchEnv) stream(ctx context.Context, i int, firstToken func()) (int, error) {
	body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":64,"ignore_eos":true,"seed":%d,"messages":[{"role":"user","content":"Tell me a story about a fox."}]}`,
		servingtest.BaseModel, i)
	req, err := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, msg)
	}
	tokens := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: {") {
			continue
		}
		if n := strings.Count(line, `"token":"token_id:`); n > 0 {
			if tokens == 0 {
				firstToken()
			}
			tokens += n
		}
	}
	return tokens, sc.Err()
}
