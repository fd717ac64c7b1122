package api

import (
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// What one client can hold of the server. A request costs little while its
// body trickles in (nothing is allocated from a declared Content-Length), but
// each still holds a goroutine, buffers and a socket, so time and count are
// bounded too.
const (
	// DefaultBodyTimeout bounds reading one request body when
	// Config.BodyTimeout is zero: a 64 MiB upload needs about 1 MiB/s.
	DefaultBodyTimeout = time.Minute
	// DefaultWriteTimeout bounds writing one response (or one event of a
	// stream) when Config.WriteTimeout is zero.
	DefaultWriteTimeout = time.Minute
	// DefaultMaxRequestsPerKey caps one account's requests in flight when
	// Config.MaxRequestsPerKey is zero. Chat requests past the decoding
	// batch wait in serving's queue, and an RL client sends a few hundred
	// rollouts at once: this sits above such a group, so only a client
	// holding sockets open by the hundred runs into it.
	DefaultMaxRequestsPerKey = 512
	// readHeaderTimeout bounds reading a request's headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes keep-alive connections nobody uses.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds a request's headers (Go's default is 1 MiB).
	maxHeaderBytes = 64 << 10
)

// ConfigureHTTPServer sets the connection limits the API relies on: header,
// idle and header-size limits. Per-request body and write deadlines are set
// by the handlers (a server-wide ReadTimeout or WriteTimeout would also cut
// streamed chat completions, and a read deadline that passes while a handler
// runs cancels its context).
func ConfigureHTTPServer(srv *http.Server) {
	srv.ReadHeaderTimeout = readHeaderTimeout
	srv.IdleTimeout = idleTimeout
	srv.MaxHeaderBytes = maxHeaderBytes
	var b burst
	srv.ConnState = b.track
}

// burst hands memory back to the operating system when a burst of
// connections is over. Thousands of connections leave their goroutine
// stacks and buffers free but resident; the runtime's scavenger would return
// them over minutes, during which the process looks (to an orchestrator that
// scales or kills by RSS) as big as at its peak.
type burst struct {
	mu       sync.Mutex
	open     int
	peak     int
	released time.Time
}

// burstConns is the peak that counts as a burst; trims are at least
// burstTrimEvery apart.
const (
	burstConns     = 256
	burstTrimEvery = 10 * time.Second
)

func (b *burst) track(_ net.Conn, state http.ConnState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch state {
	case http.StateNew:
		b.open++
		b.peak = max(b.peak, b.open)
	case http.StateClosed, http.StateHijacked:
		b.open--
		if b.peak >= burstConns && b.open <= b.peak/20 && time.Since(b.released) >= burstTrimEvery {
			b.peak, b.released = b.open, time.Now()
			go debug.FreeOSMemory()
		}
	}
}

// inflight counts each account's requests in flight.
type inflight struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newInflight(max int) *inflight { return &inflight{max: max, n: map[string]int{}} }

// acquire takes a slot for id; ok is false past the cap.
func (l *inflight) acquire(id string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[id] >= l.max {
		return nil, false
	}
	l.n[id]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n[id]--; l.n[id] == 0 {
			delete(l.n, id)
		}
	}, true
}

// limitInflight answers 429 when the authenticated account already has
// Config.MaxRequestsPerKey requests in flight, before anything is read.
func (s *Server) limitInflight(c *gin.Context) {
	acct := accountOf(c)
	release, ok := s.inflight.acquire(acct.ID)
	if !ok {
		c.Header("Retry-After", "1")
		s.writeDetail(c, http.StatusTooManyRequests, fmt.Sprintf(
			"Too many requests in flight for this account (at most %d); wait for some to finish.", s.cfg.MaxRequestsPerKey))
		return
	}
	defer release()
	c.Next()
}

// bodyDeadline gives a request's body Config.BodyTimeout to arrive even
// when no handler reads it (a request refused before its body, a route that
// takes none, an unknown path): Go's server reads an unread body of up to
// 256 KiB before it answers, and again before it reuses the connection,
// with no deadline of its own, so without this a client that declares a
// small body and sends part of it holds its connection, unanswered, for as
// long as it likes. When the deadline passes, the server answers and closes
// the connection. readBody replaces the deadline with its own, and lifts it
// once the body is in. Requests without a body get none: their connection
// is watched for a hang-up while the handler runs, and a deadline would end
// that watch by cancelling the request.
func (s *Server) bodyDeadline(c *gin.Context) {
	if c.Request.ContentLength != 0 {
		_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	}
	c.Next()
}

// extendWrite gives the next write of the response Config.WriteTimeout to
// complete, so a client that stops reading cannot hold a handler forever.
// It is set just before writing, not when the request arrives, because
// generating an answer may take longer than writing it should.
func (s *Server) extendWrite(c *gin.Context) {
	// Not every ResponseWriter supports deadlines (httptest's recorder
	// does not); then there is no socket to protect.
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
}
