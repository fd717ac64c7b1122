package api_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct{ id, name, data string }

// readSSE reads events (and counts keep-alive comments) from a stream
// until it ends or n events arrived.
func readSSE(t *testing.T, r *bufio.Reader, n int, keepAlives *int) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	for len(out) < n {
		line, err := r.ReadString('\n')
		if err != nil {
			return out
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, ": "):
			if keepAlives != nil {
				*keepAlives++
			}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		case line == "" && cur.id != "":
			out = append(out, cur)
			cur = sseEvent{}
		}
	}
	return out
}

// TestEventStream: GET .../events?stream=true delivers a job's events as
// they are recorded (with their ids, so a reconnect resumes with
// Last-Event-ID or `after`), sends keep-alives while quiet and ends after
// the terminal event.
func TestEventStream(t *testing.T) {
	t.Parallel()
	e, _ := newJobsEnv(t, func(c *api.Config, _ *api.Deps) {
		c.EventPoll, c.EventKeepAlive = 20*time.Millisecond, 150*time.Millisecond
	})
	srv := httptest.NewServer(e.srv.Handler())
	t.Cleanup(srv.Close)
	model := e.createModel("stream")
	ctx := context.Background()
	job, _, err := e.db.CreateJob(ctx, &trainyard.Job{ID: uuid.Must(uuid.NewV7()).String(), AccountID: e.acct.ID, ModelID: model, Kind: trainyard.JobKindRL})
	if err != nil {
		t.Fatal(err)
	}
	appendEvent := func(seq int, typ trainyard.EventType) time.Time {
		t.Helper()
		if _, err := e.db.AppendEvent(ctx, &trainyard.Event{JobID: job.ID, Seq: seq, Type: typ, Data: map[string]any{"step": seq}}); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	open := func(query, lastID string) *bufio.Reader {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/v1/preview/training-jobs/"+job.ID+"/events?stream=true"+query, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return bufio.NewReader(resp.Body)
	}

	appendEvent(1, trainyard.EventTrainingStarted)
	r := open("", "")
	keepAlives := 0
	first := readSSE(t, r, 1, &keepAlives)
	if len(first) != 1 || first[0].name != "training_started" || !strings.Contains(first[0].data, `"type":"training_started"`) {
		t.Fatalf("first events %v", first)
	}
	time.Sleep(400 * time.Millisecond) // quiet: keep-alives come
	var lag time.Duration
	for seq := 2; seq <= 4; seq++ {
		at := appendEvent(seq, trainyard.EventGradientStep)
		got := readSSE(t, r, 1, &keepAlives)
		lag = max(lag, time.Since(at))
		if len(got) != 1 || got[0].name != "gradient_step" {
			t.Fatalf("event %d: %v", seq, got)
		}
		first = append(first, got...)
	}
	if keepAlives == 0 {
		t.Fatal("no keep-alive while the stream was quiet")
	}
	t.Logf("delivery lag at most %v (poll %v)", lag.Round(time.Millisecond), 20*time.Millisecond)

	// A reconnect resumes after the last event it saw, by header or cursor.
	resumed := readSSE(t, open("", first[1].id), 2, nil)
	if len(resumed) != 2 || resumed[0].id != first[2].id || resumed[1].id != first[3].id {
		t.Fatalf("Last-Event-ID resume: %v", resumed)
	}
	appendEvent(5, trainyard.EventTrainingEnded)
	rest := readSSE(t, open("&after="+first[3].id, ""), 10, nil)
	if len(rest) != 1 || rest[0].name != "training_ended" {
		t.Fatalf("after the terminal event: %v", rest)
	}
	// The stream ended after it: the original reader sees the end too.
	if tail := readSSE(t, r, 10, nil); len(tail) != 1 || tail[0].name != "training_ended" {
		t.Fatalf("original stream's end: %v", tail)
	}
	// A bad Last-Event-ID is a 422 like a bad cursor.
	res := e.call("GET", "/v1/preview/training-jobs/"+job.ID+"/events?stream=true", nil, header("Last-Event-ID", "nope"))
	mustStatus(t, res, http.StatusUnprocessableEntity)
}
