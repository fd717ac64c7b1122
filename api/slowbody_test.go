package api_test

import (
	"bufio"
	"fmt"
	"io"
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

// slowBodyRSSBound is what 500 slow-body sockets may add to the process's
// RSS: a fraction of a single declared body (64 MiB), where allocating by
// the declared length would take 500 of them.
const slowBodyRSSBound = 64 << 20

// BenchmarkSlowBodySockets opens 500 sockets that each declare a 64 MiB
// body and send one byte (the in-flight cap raised so that all 500 are held
// by handlers), then checks that /v1/health still answers and that the
// process's RSS grew by less than slowBodyRSSBound. Reported: that growth
// (client and server share the process), the RSS and the health check's
// latency.
//
//	go test -run '^$' -bench SlowBodySockets -benchtime 1x ./api
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
		grown := rssBytes(b) - before
		if grown > slowBodyRSSBound {
			b.Errorf("RSS grew by %d MiB under %d slow-body sockets, past the bound of %d MiB", grown>>20, sockets, slowBodyRSSBound>>20)
		}
		b.ReportMetric(float64(grown)/(1<<20), "rss_growth_MiB")
		b.ReportMetric(float64(rssBytes(b))/(1<<20), "rss_MiB")
		b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
		for _, c := range conns {
			c.Close()
		}
	}
}

// TestUnreadBodiesAreBounded: a body that no handler reads (a request
// refused before its body, a route that takes none) still has
// Config.BodyTimeout to arrive. Go's server reads such a body before it
// answers, and again before it reuses the connection, with no deadline of
// its own, so a client declaring a small body and sending part of it held
// its connection, unanswered, for as long as it liked, whatever its key.
func TestUnreadBodiesAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *api.Config, _ *api.Deps) { c.BodyTimeout = time.Second })
	addr := e.serveHTTP(t)
	auth := "Authorization: Bearer " + e.key + "\r\n"
	model := e.createModel("unread")
	for _, c := range []struct {
		name, request string
		status        int
	}{
		{"refused before its body", "POST /v1/preview/models HTTP/1.1\r\n", http.StatusUnauthorized},
		{"a body too slow to read", "POST /v1/preview/models HTTP/1.1\r\n" + auth, http.StatusRequestTimeout},
		{"a route that reads no body", "GET /v1/preview/models/" + model + "/checkpoints HTTP/1.1\r\n" + auth, http.StatusOK},
		{"no such route", "GET /v1/nowhere HTTP/1.1\r\n", http.StatusNotFound},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		fmt.Fprintf(conn, "%sHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", c.request)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("%s: no answer: %v", c.name, err)
			continue
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		// Whatever was sent of the body must not be read as a request:
		// the server closes the connection after its answer.
		if err == nil {
			_, err = br.ReadByte()
		}
		took := time.Since(start)
		if res.StatusCode != c.status || err != io.EOF || took > 5*time.Second {
			t.Errorf("%s: %d, then %v, after %v; want %d, then the connection closed, within seconds", c.name, res.StatusCode, err, took, c.status)
		}
	}
	// Bodies that arrive keep their connection for the next request.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for i := range 2 {
		body := fmt.Sprintf(`{"project": "p", "name": "kept-%d", "base_model": "trainyard/tiny-chat"}`, i)
		fmt.Fprintf(conn, "POST /v1/preview/models HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", auth, len(body), body)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(br, nil)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("request %d on a kept connection: %v %v", i, res, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
}
