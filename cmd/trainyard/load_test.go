package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/storage/postgres"
)

// BenchmarkLoad holds 2,000 concurrent loopback connections against a
// `serve` process for TRAINYARD_LOAD_DURATION (30 s by default): 64 of them
// ask for chat completions in a loop, the others alternate /v1/health with
// keyed GETs (a model's checkpoints, the account's jobs) spread over 32
// accounts. It reports requests/s, p50 and p99 latency, the answers by
// status and the server's RSS before the run and once its connections have
// gone idle after it. The goals (issue 12): no 5xx, chat past its limit
// answered 429, RSS back within 10% of where it started.
//
//	make bench BENCH=Load PKG=./cmd/trainyard BENCHTIME=1x
func BenchmarkLoad(b *testing.B) {
	duration := 30 * time.Second
	if v := os.Getenv("TRAINYARD_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		duration = d
	}
	dbURL := pgtest.URL(b)
	p := startServeProcess(b, "DATABASE_URL="+dbURL, "TRAINYARD_DATA_DIR="+b.TempDir(), "TRAINYARD_HTTP_ADDR=127.0.0.1:0",
		"TRAINYARD_TEMPORAL_FRONTEND_ADDR=127.0.0.1:0", "TRAINYARD_TEMPORAL_UI_ADDR=off", "TRAINYARD_DEV_API_KEY=",
		"TEMPORAL_ADDRESS=", "S3_ENDPOINT=", "TRAINYARD_S3_ENDPOINT=", "TRAINYARD_LOG_LEVEL=warn")
	db, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	type client struct{ key, model string }
	var clients []client
	for i := range 32 {
		acct, err := db.CreateAccount(context.Background(), fmt.Sprintf("load-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		key, _, err := db.CreateAPIKey(context.Background(), acct.ID, "")
		if err != nil {
			b.Fatal(err)
		}
		code, m := call(b, "POST", p.api+"/v1/preview/models", key, `{"project":"p","name":"m","base_model":"trainyard/tiny-chat"}`)
		if code != 200 {
			b.Fatalf("create model: %d %v", code, m)
		}
		clients = append(clients, client{key: key, model: m["id"].(string)})
	}

	// Warm up: the base model and the chat batcher load on first use and
	// stay, which is not what the run should measure.
	for range 3 {
		if code, out := call(b, "POST", p.api+"/v1/chat/completions", clients[0].key,
			`{"model":"trainyard/tiny-chat","max_tokens":8,"messages":[{"role":"user","content":"Say hi."}]}`); code != 200 {
			b.Fatalf("warm-up chat: %d %v", code, out)
		}
	}
	for b.Loop() {
		before := processRSS(b, p.cmd.Process.Pid)
		var mu sync.Mutex
		statuses := map[int]int{}
		var latencies []time.Duration
		record := func(code int, d time.Duration) {
			mu.Lock()
			statuses[code]++
			latencies = append(latencies, d)
			mu.Unlock()
		}
		stop := time.Now().Add(duration)
		var wg sync.WaitGroup
		const conns, chatters = 2000, 64
		for i := range conns {
			c := clients[i%len(clients)]
			hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}, Timeout: time.Minute}
			wg.Go(func() {
				defer hc.CloseIdleConnections()
				for n := 0; time.Now().Before(stop); n++ {
					var req *http.Request
					switch {
					case i < chatters:
						req, _ = http.NewRequest("POST", p.api+"/v1/chat/completions", strings.NewReader(
							`{"model":"trainyard/tiny-chat","max_tokens":8,"messages":[{"role":"user","content":"Say hi."}]}`))
					case n%2 == 0:
						req, _ = http.NewRequest("GET", p.api+"/v1/health", nil)
					case n%4 == 1:
						req, _ = http.NewRequest("GET", p.api+"/v1/preview/models/"+c.model+"/checkpoints?limit=5", nil)
					default:
						req, _ = http.NewRequest("GET", p.api+"/v1/preview/training-jobs?limit=5", nil)
					}
					req.Header.Set("Authorization", "Bearer "+c.key)
					req.Header.Set("Content-Type", "application/json")
					start := time.Now()
					resp, err := hc.Do(req)
					if err != nil {
						record(0, time.Since(start))
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					record(resp.StatusCode, time.Since(start))
				}
			})
		}
		wg.Wait()
		time.Sleep(10 * time.Second) // idle connections close, the runtime returns freed memory
		after := processRSS(b, p.cmd.Process.Pid)

		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		n := len(latencies)
		b.ReportMetric(float64(n)/duration.Seconds(), "req/s")
		b.ReportMetric(float64(latencies[n/2].Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(latencies[n*99/100].Microseconds())/1000, "p99_ms")
		b.ReportMetric(float64(before)/(1<<20), "rss_before_MiB")
		b.ReportMetric(float64(after)/(1<<20), "rss_after_MiB")
		fives := 0
		var parts []string
		for code, k := range statuses {
			parts = append(parts, fmt.Sprintf("%d:%d", code, k))
			if code >= 500 || code == 0 {
				fives += k
			}
		}
		sort.Strings(parts)
		b.ReportMetric(float64(fives), "errors_5xx_or_failed")
		b.ReportMetric(float64(statuses[http.StatusTooManyRequests]), "429s")
		b.Logf("answers by status: %s", strings.Join(parts, " "))
	}
}

// processRSS reads a process's resident set size.
func processRSS(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}
