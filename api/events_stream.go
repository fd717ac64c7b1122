package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// Defaults of the event stream when Config leaves them zero.
const (
	// DefaultEventPoll is how often a stream looks for new events.
	DefaultEventPoll = 200 * time.Millisecond
	// DefaultEventKeepAlive is how long a quiet stream waits before it
	// sends a comment line, so proxies and clients keep it open.
	DefaultEventKeepAlive = 15 * time.Second
)

// streamEvents answers GET .../events?stream=true with Server-Sent Events
// (trainyard's own addition to the route): every event of the job after the
// cursor (the `after` query parameter, or the Last-Event-ID header a
// reconnecting client sends), as it is recorded, each with its id, its type
// as the event name and the list item as data. The stream ends after the
// job's terminal event; a quiet stream sends a keep-alive comment now and
// then.
func (s *Server) streamEvents(c *gin.Context, job *trainyard.Job, after string) {
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	c.Writer.Flush()
	ctx := c.Request.Context()
	log := s.requestLog(c).With(zap.String("job_id", job.ID))
	var buf bytes.Buffer
	write := func(b []byte) bool {
		s.extendWrite(c)
		if _, err := c.Writer.Write(b); err != nil {
			log.Info("event stream: client went away", zap.Error(err))
			return false
		}
		c.Writer.Flush()
		return true
	}
	// A job that had ended when the stream began has all its events: they
	// are sent and the stream ends, even if the cursor is past its end.
	finished := job.Status.Terminal()
	quietSince := time.Now()
	for {
		page, err := s.deps.Events.ListEvents(ctx, job.ID, trainyard.ListOptions{After: after, Limit: trainyard.MaxPageLimit})
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("event stream: cannot read events", zap.Error(err))
				buf.Reset()
				fmt.Fprintf(&buf, "event: error\ndata: {\"detail\": %q}\n\n", trainyard.ErrorMessage(err))
				write(buf.Bytes())
			}
			return
		}
		for _, e := range page.Items {
			data := e.Data
			if data == nil {
				data = map[string]any{}
			}
			js, err := json.Marshal(eventResponse{ID: e.ID, Type: string(e.Type), Data: data})
			if err != nil {
				log.Error("event stream: encode event", zap.Error(err))
				return
			}
			buf.Reset()
			fmt.Fprintf(&buf, "id: %s\nevent: %s\ndata: %s\n\n", e.ID, e.Type, js)
			if !write(buf.Bytes()) {
				return
			}
			after, quietSince = e.ID, time.Now()
			if e.Type == trainyard.EventTrainingEnded || e.Type == trainyard.EventTrainingFailed {
				return
			}
		}
		if page.HasMore {
			continue
		}
		if finished {
			return
		}
		if time.Since(quietSince) >= s.cfg.EventKeepAlive {
			if !write([]byte(": keep-alive\n\n")) {
				return
			}
			quietSince = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.EventPoll):
		}
	}
}
