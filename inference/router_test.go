package inference

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/storage/postgres"
)

// registered writes one heartbeat of a process at address and returns it.
func registered(t *testing.T, db *postgres.DB, address string, inFlight, capacity int, lease time.Duration, models ...string) *trainyard.InferenceProcess {
	t.Helper()
	p := &trainyard.InferenceProcess{Address: address, BaseModels: models, InFlight: inFlight, Capacity: capacity}
	if err := db.HeartbeatInference(context.Background(), p, lease); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPickOrdersLiveHoldersByLoad(t *testing.T) {
	t.Parallel()
	db, ctx := pgtest.New(t), context.Background()
	registered(t, db, "http://busy", 6, 8, time.Minute, "a")
	idle1 := registered(t, db, "http://idle1", 0, 8, time.Minute, "a", "b")
	idle2 := registered(t, db, "http://idle2", 0, 4, time.Minute, "a") // 0/4 = 0/8: load is relative
	registered(t, db, "http://half", 2, 4, time.Minute, "a")
	registered(t, db, "http://other", 0, 8, time.Minute, "b")
	registered(t, db, "http://dead", 0, 8, time.Millisecond, "a")
	draining := &trainyard.InferenceProcess{Address: "http://draining", BaseModels: []string{"a"}, Capacity: 8, Draining: true}
	if err := db.HeartbeatInference(ctx, draining, time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	r := NewRouter(db, db, RouterConfig{}, nil)
	procs, err := r.reload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	order := func() string {
		var s []string
		for _, p := range r.pick(procs, "a", "") {
			s = append(s, p.Address)
		}
		return strings.Join(s, " ")
	}
	// The idle ones tie: this router's own calls in flight decide.
	_, done := r.track(ctx, idle1.ID)
	if got := order(); got != "http://idle2 http://idle1 http://half http://busy" {
		t.Fatalf("order = %s", got)
	}
	done()
	_, done = r.track(ctx, idle2.ID)
	if got := order(); got != "http://idle1 http://idle2 http://half http://busy" {
		t.Fatalf("order = %s", got)
	}
	done()
	// Without local calls the tie is broken at random: both come first.
	first := map[string]bool{}
	for range 64 {
		first[strings.Fields(order())[0]] = true
	}
	if !first["http://idle1"] || !first["http://idle2"] {
		t.Fatalf("tie never broken both ways: %v", first)
	}
	// A process that refused a connection sits out until its next heartbeat.
	for _, p := range procs {
		if p.ID == idle1.ID {
			r.markDown(p)
		}
	}
	if strings.Contains(order(), "idle1") {
		t.Fatalf("after markDown: %s", order())
	}
	if err := db.HeartbeatInference(ctx, idle1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if procs, err = r.reload(ctx); err != nil {
		t.Fatal(err)
	}
	if got := order(); got != "http://idle1 http://idle2 http://half http://busy" && got != "http://idle2 http://idle1 http://half http://busy" {
		t.Fatalf("after a new heartbeat: %s", got)
	}
}

// TestPickKeepsAnAdaptersRequestsTogether: an adapter's requests go to the
// process its last one went to while that process has room, even when
// another is less loaded; a full one, or a request on the base model
// alone, is placed by load.
func TestPickKeepsAnAdaptersRequestsTogether(t *testing.T) {
	t.Parallel()
	db, ctx := pgtest.New(t), context.Background()
	registered(t, db, "http://idle", 0, 8, time.Minute, "a")
	half := registered(t, db, "http://half", 4, 8, time.Minute, "a")
	full := registered(t, db, "http://full", 8, 8, time.Minute, "a")
	r := NewRouter(db, db, RouterConfig{}, nil)
	procs, err := r.reload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := func(affinity string) string { return r.pick(procs, "a", affinity)[0].Address }
	if got := first("acct\x00m:step3"); got != "http://idle" {
		t.Fatalf("a new adapter went to %s, want the least loaded", got)
	}
	r.remember("acct\x00m:step3", half.ID)
	if got := first("acct\x00m:step3"); got != "http://half" {
		t.Fatalf("the adapter's next request went to %s, want its process with room", got)
	}
	if got := first(""); got != "http://idle" {
		t.Fatalf("a base model request went to %s", got)
	}
	r.remember("acct\x00m:step3", full.ID)
	if got := first("acct\x00m:step3"); got != "http://idle" {
		t.Fatalf("the adapter's request went to %s, whose slots are all taken", got)
	}
	if n := len(r.pick(procs, "a", "acct\x00m:step3")); n != 3 {
		t.Fatalf("pick lists %d processes, want all 3", n)
	}
}

// forward runs Forward into a recorder.
func forward(r *Router, model string, header ...string) (*httptest.ResponseRecorder, error) {
	rec := httptest.NewRecorder()
	h := http.Header{"Authorization": {"Bearer k"}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	err := r.Forward(context.Background(), rec, Call{AccountID: "00000000-0000-0000-0000-000000000000", Model: model,
		Path: "/v1/chat/completions", Header: h, Body: []byte(`{}`)})
	return rec, err
}

func TestForwardCopiesAnswersAndSurvivesDeadProcesses(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "bad forward", http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("X-Request-ID", "rid")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "data: {\"n\":2}\n\ndata: {\"cut")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the process dies mid-event
	}))
	t.Cleanup(upstream.Close)
	// A dead address (nothing listens) is tried first and skipped.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := "http://" + ln.Addr().String()
	ln.Close()
	registered(t, db, deadAddr, 0, 8, time.Minute, "m")
	registered(t, db, upstream.URL, 4, 8, time.Minute, "m")
	r := NewRouter(db, db, RouterConfig{}, nil)

	rec, err := forward(r, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := "data: {\"n\":1}\n\ndata: {\"n\":2}\n\n" + string(errorEvent(msgLostStream))
	if rec.Code != 200 || rec.Body.String() != want || rec.Header().Get("X-Request-ID") != "rid" {
		t.Fatalf("got %d %q %v, want %q", rec.Code, rec.Body.String(), rec.Header(), want)
	}
	if !strings.Contains(want, `{"error":{"code":503,"message":"The inference process serving this stream stopped; retry the request.","type":"unavailable"}}`) {
		t.Fatalf("error event %q", want)
	}
	// No live holder: 503; a name nobody knows: 404.
	if _, err := forward(r, "nobody-holds-this"); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
		t.Fatalf("unknown model: %v", err)
	}
	r2 := NewRouter(db, db, RouterConfig{BaseModels: []string{"known"}}, nil)
	if _, err := forward(r2, "known"); trainyard.ErrorCode(err) != trainyard.EUNAVAILABLE ||
		!strings.Contains(trainyard.ErrorMessage(err), "No inference process serving the base model `known`") {
		t.Fatalf("unheld model: %v", err)
	}
}

func TestForwardEndsCallsOfAHungProcess(t *testing.T) {
	t.Parallel()
	db, ctx := pgtest.New(t), context.Background()
	hang := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "json" {
			<-hang // never answers
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		<-hang
	}))
	t.Cleanup(func() { close(hang); upstream.Close() })
	registered(t, db, upstream.URL, 0, 8, 300*time.Millisecond, "m") // never renewed: as if SIGSTOPped
	r := NewRouter(db, db, RouterConfig{Refresh: 50 * time.Millisecond}, nil)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go r.Run(rctx)

	start := time.Now()
	rec, err := forward(r, "m")
	if err != nil || rec.Body.String() != "data: {\"n\":1}\n\n"+string(errorEvent(msgLostStream)) {
		t.Fatalf("stream: %v %q", err, rec.Body.String())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the stream of a hung process ended after %v", d)
	}
	// Its lease ran out: nothing is sent there any more.
	if _, err := forward(r, "m"); trainyard.ErrorCode(err) != trainyard.EUNAVAILABLE ||
		!strings.Contains(trainyard.ErrorMessage(err), "No inference process") {
		t.Fatalf("after the lease: %v", err)
	}
	// A request that gets no answer at all ends with a 503 of its own.
	registered(t, db, upstream.URL, 0, 8, 300*time.Millisecond, "m")
	time.Sleep(120 * time.Millisecond) // the router's next read sees it
	start = time.Now()
	if _, err := forward(r, "m", "Accept", "json"); trainyard.ErrorCode(err) != trainyard.EUNAVAILABLE ||
		trainyard.ErrorMessage(err) != msgLostBeforeAnswer || time.Since(start) > 3*time.Second {
		t.Fatalf("unanswered request: %v after %v", err, time.Since(start))
	}
}
