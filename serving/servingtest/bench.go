package servingtest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RunStreamBenchmark runs b.N rounds of `streams` concurrent calls of one(ctx, index, firstToken), where
// one calls firstToken when its first token arrives and returns the tokens it generated. It reports
// ttft_ms (mean time to first token), tok/s (all streams together), tok/s/stream and peak_rss_MB.
func RunStreamBenchmark(b *testing.B, streams int, one func(ctx context.Context, i int, firstToken func()) (int, error)) {
	var ttft time.Duration
	var tokens int
	var mu sync.Mutex
	b.ResetTimer()
	start := time.Now()
	for round := 0; round < b.N; round++ {
		var wg sync.WaitGroup
		for s := 0; s < streams; s++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				t0 := time.Now()
				n, err := one(context.Background(), i, func() {
					mu.Lock()
					ttft += time.Since(t0)
					mu.Unlock()
				})
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				tokens += n
				mu.Unlock()
			}(round*streams + s)
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(ttft.Milliseconds())/float64(b.N*streams), "ttft_ms")
	b.ReportMetric(float64(tokens)/elapsed.Seconds(), "tok/s")
	b.ReportMetric(float64(tokens)/elapsed.Seconds()/float64(streams), "tok/s/stream")
	b.ReportMetric(PeakRSSMB(), "peak_rss_MB")
}

// PeakRSSMB reads the process's peak resident set size (VmHWM) from /proc, 0 where unavailable.
func PeakRSSMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
