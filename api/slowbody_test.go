package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard/api"
)

// serveHTTP runs the env's API on a real loopback listener with the
// production server settings, so sockets, deadlines and buffers are real.
func (e *env) serveHTTP(tb testing.TB) string {
	srv := httptest.NewUnstartedServer(e.srv.Handler())
	api.ConfigureHTTPServer(srv.Config)
	srv.Start()
	tb.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// slowBody opens a connection that declares a 64 MiB body and sends one
// byte of it, as the attacker did. The connection stays open until
// closed.
func slowBody(tb testing.TB, addr, key string) net.Conn {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /v1/preview/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{", key, 64<<20-1)
	return conn
}

// statusOf reads the status code of the response on conn.
func statusOfConn(conn net.Conn, within time.Duration) (int, error) {
	_ = conn.SetReadDeadline(time.Now().Add(within))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestSlowBodiesHoldNoMemory is issue 16's second defect: eight sockets,
// each declaring 64 MiB and sending a byte, made the server allocate 512 MiB.
// Now the body buffer grows only with what arrives, the read ends with 408
// after the body timeout, and sockets past the account's in-flight cap get
// 429 before anything is read.
func TestSlowBodiesHoldNoMemory(t *testing.T) {
	e := newEnv(t, func(c *api.Config, _ *api.Deps) {
		c.BodyTimeout = 2 * time.Second
		c.MaxRequestsPerKey = 6
	})
	addr := e.serveHTTP(t)
	before := heapInUse()
	conns := make([]net.Conn, 8)
	for i := range conns {
		conns[i] = slowBody(t, addr, e.key)
		defer conns[i].Close()
	}
	// Past the cap of 6, the 7th and 8th are refused at once.
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			code, err := statusOfConn(c, 10*time.Second)
			if err != nil {
				t.Errorf("no answer on a slow socket: %v", err)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	// While the six are held, the heap has not grown by their declared
	// lengths (6 × 64 MiB).
	time.Sleep(500 * time.Millisecond)
	if grown := int64(heapInUse()) - int64(before); grown > 16<<20 {
		t.Errorf("heap grew by %d MiB for 6 sockets that sent 1 byte each", grown>>20)
	}
	wg.Wait()
	if codes[http.StatusTooManyRequests] != 2 || codes[http.StatusRequestTimeout] != 6 {
		t.Fatalf("statuses %v, want 2 × 429 and 6 × 408", codes)
	}
	// The account's slots are free again.
	res := e.call("POST", "/v1/preview/models", `{"project": "p", "name": "after", "base_model": "trainyard/tiny-chat"}`)
	mustStatus(t, res, http.StatusOK)
}

// rssBytes is the process's resident set size.
func rssBytes(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	tb.Skip("no VmRSS")
	return 0
}

// BenchmarkSlowBodySockets opens 500 sockets that each declare a 64 MiB
// body and send one byte (the in-flight cap raised so that all 500 are held
// by handlers), then checks that /v1/health still answers. Reported: the
// process's RSS growth while they are held (client and server share the
// process) and the health check's latency.
func BenchmarkSlowBodySockets(b *testing.B) {
	e := newEnv(b, func(c *api.Config, _ *api.Deps) { c.MaxRequestsPerKey = 1000 })
	addr := e.serveHTTP(b)
	const sockets = 500
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		before := rssBytes(b)
		conns := make([]net.Conn, 0, sockets)
		for range sockets {
			conns = append(conns, slowBody(b, addr, e.key))
		}
		time.Sleep(time.Second) // let every handler reach its body read
		b.StartTimer()
		start := time.Now()
		res, err := http.Get("http://" + addr + "/v1/health")
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("health under 500 slow sockets: %v %v", res, err)
		}
		res.Body.Close()
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "health_ms")
		b.ReportMetric(float64(rssBytes(b)-before)/(1<<20), "rss_growth_MiB")
		b.ReportMetric(float64(rssBytes(b))/(1<<20), "rss_MiB")
		b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
		for _, c := range conns {
			c.Close()
		}
	}
}
