package servingtest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RunStreamBenchmark runs b.N rounds of `streams` concurrent calls of one(ctx, index, firstToken), where
// one calls firstToken when its first token arrives and returns the tokens it generated. It reports
// ttft_ms (mean time to first token), tok/s (all streams together), tok/s/stream, tok/cpu_s (tokens per
// second of CPU time used by the process, which stays comparable on a machine shared with other work)
// and peak_rss_MB.
func RunStreamBenchmark(b *testing.B, streams int, one func(ctx context.Context, i int, firstToken func()) (int, error)) {
	var ttft time.Duration
	var tokens int
	var mu sync.Mutex
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
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
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	b.ReportMetric(float64(ttft.Milliseconds())/float64(b.N*streams), "ttft_ms")
	b.ReportMetric(float64(tokens)/elapsed.Seconds(), "tok/s")
	b.ReportMetric(float64(tokens)/elapsed.Seconds()/float64(streams), "tok/s/stream")
	b.ReportMetric(float64(tokens)/cpu.Seconds(), "tok/cpu_s")
	b.ReportMetric(PeakRSSMB(), "peak_rss_MB")
}

// cpuTime is the user plus system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
