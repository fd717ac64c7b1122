package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
)

// BenchmarkChatLatency measures one short streamed chat completion (16
// tokens of trainyard/tiny-chat, ignore_eos, one client at a time) three
// ways on one database and one S3 server: through `serve`, which samples in
// its API process; through `trainyard api` with TRAINYARD_INFERENCE=remote,
// which forwards to a `trainyard infer` process (api+infer); and straight
// to that infer process. Each iteration asks all three once. It reports,
// per way, the mean and median time to the first token event (ttft) and to
// the end of the stream (total), and the 1-minute load average, because
// the machine is shared.
//
//	make bench BENCH=ChatLatency PKG=./cmd/trainyard BENCHTIME=300x
func BenchmarkChatLatency(b *testing.B) {
	dbURL, s3cfg := pgtest.URL(b), s3test.Config(b)
	storage := map[string]string{"DATABASE_URL": dbURL, "S3_ENDPOINT": s3cfg.Endpoint, "S3_BUCKET": s3cfg.Bucket,
		"S3_USE_PATH_STYLE": "true", "AWS_ACCESS_KEY_ID": s3cfg.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3cfg.SecretAccessKey,
		"AWS_REGION": s3cfg.Region, "TRAINYARD_HTTP_ADDR": "127.0.0.1:0", "TRAINYARD_LOG_LEVEL": "info"}
	serveEnv := []string{"TRAINYARD_DATA_DIR=" + b.TempDir(), "TRAINYARD_TEMPORAL_FRONTEND_ADDR=127.0.0.1:0",
		"TRAINYARD_TEMPORAL_UI_ADDR=off", "TRAINYARD_DEV_API_KEY=", "TEMPORAL_ADDRESS=", "TRAINYARD_INFERENCE="}
	for k, v := range storage {
		serveEnv = append(serveEnv, k+"="+v)
	}
	serve := startServeProcess(b, serveEnv...)
	m := regexp.MustCompile(`(?m)^  Temporal +(\S+) \(namespace`).FindStringSubmatch(serve.out.String())
	if m == nil {
		b.Fatalf("no Temporal address in serve's banner:\n%s", serve.out)
	}
	env := func(extra ...string) map[string]string {
		e := map[string]string{}
		for k, v := range storage {
			e[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			e[extra[i]] = extra[i+1]
		}
		return e
	}
	infer := startInfer(b, "infer", env(), "trainyard/tiny-chat")
	api := startProcess(b, "api", "api", env("TEMPORAL_ADDRESS", m[1], "TRAINYARD_INFERENCE", "remote"))
	apiURL := api.await(b, regexp.MustCompile(`"msg":"API listening","url":"([^"]+)"`))

	targets := []struct{ name, url string }{{"serve", serve.api}, {"api+infer", apiURL}, {"infer", infer.url}}
	for _, target := range targets {
		for i := 0; ; i++ { // warm up: the base model and the router's view load on first use
			_, _, err := streamOnce(target.url, serve.key, i)
			if err == nil && i >= 5 {
				break
			}
			if i > 200 {
				b.Fatalf("%s: %v", target.name, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Each round asks every target once, in turn, so a shared machine's
	// load weighs on all three alike.
	ttfts, totals := make([][]time.Duration, len(targets)), make([][]time.Duration, len(targets))
	load := loadAverage()
	for i := 0; b.Loop(); i++ {
		for k := range targets {
			j := (i + k) % len(targets)
			ttft, total, err := streamOnce(targets[j].url, serve.key, i)
			if err != nil {
				b.Fatalf("%s: %v", targets[j].name, err)
			}
			ttfts[j], totals[j] = append(ttfts[j], ttft), append(totals[j], total)
		}
	}
	for j, target := range targets {
		report(b, target.name+"_ttft", ttfts[j])
		report(b, target.name+"_total", totals[j])
	}
	b.ReportMetric((load+loadAverage())/2, "loadavg_1m")
}

// streamOnce sends one streamed request and times its first token event
// and its end.
func streamOnce(url, key string, seed int) (ttft, total time.Duration, err error) {
	start := time.Now()
	resp, err := send(url, key, fmt.Sprintf(`{"model": "trainyard/tiny-chat", "stream": true, "max_tokens": 16, "ignore_eos": true, "seed": %d, `+
		`"messages": [{"role": "user", "content": "Say hi."}]}`, seed), fmt.Sprintf("bench-%d", seed))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	tokens := 0
	for sc.Scan() {
		if n := strings.Count(sc.Text(), `"token":"token_id:`); n > 0 {
			if tokens == 0 {
				ttft = time.Since(start)
			}
			tokens += n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if tokens != 16 {
		return 0, 0, fmt.Errorf("%d tokens, want 16", tokens)
	}
	return ttft, time.Since(start), nil
}

// report adds the mean and the median of ds in milliseconds.
func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	b.ReportMetric(float64(sum.Microseconds())/1000/float64(len(ds)), name+"_ms")
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"_p50_ms")
}

// loadAverage is the machine's 1-minute load average (0 without /proc).
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscan(string(raw), &l)
	return l
}
