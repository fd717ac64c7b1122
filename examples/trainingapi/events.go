package trainingapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Event is one item of GET /v1/preview/training-jobs/{id}/events.
type Event struct {
	ID   string         `json:"id"`
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// eventPage is the paginated list the events route answers.
type eventPage struct {
	Data    []Event `json:"data"`
	LastID  string  `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// WaitForJob follows a training job's events the way the ART client does:
// every second it lists the events after a cursor, but it keeps re-reading
// from the start until the first gradient_step has arrived (the first page
// is stable, so nothing is seen twice out of order). It prints a progress
// line per gradient step (with the named metrics) and returns at the first
// terminal event: the data of every gradient_step, or an error carrying
// training_failed's message.
func (c *Client) WaitForJob(ctx context.Context, jobID string, out io.Writer, metrics ...string) ([]map[string]any, error) {
	var (
		after    string // the cursor: the last event handled once a gradient_step was seen
		seen     = map[string]bool{}
		total    int
		steps    []map[string]any
		sawStep  bool
		started  = time.Now()
		endpoint = "/preview/training-jobs/" + url.PathEscape(jobID) + "/events"
	)
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
		events, err := c.EventsAfter(ctx, endpoint, after)
		if err != nil {
			return nil, err
		}
		for _, ev := range events {
			if sawStep {
				after = ev.ID
			}
			if seen[ev.ID] {
				continue
			}
			seen[ev.ID] = true
			switch ev.Type {
			case "training_started":
				total = intOf(ev.Data["num_sequences"])
				fmt.Fprintf(out, "    training started: %d gradient step(s)\n", total)
			case "gradient_step":
				steps = append(steps, ev.Data)
				if !sawStep {
					sawStep, after = true, ev.ID
				}
				fmt.Fprintf(out, "    %s %d/%d  %s  (%.1fs)\n", bar(len(steps), total, 20), len(steps), total,
					formatMetrics(ev.Data, metrics...),
					time.Since(started).Seconds())
			case "training_ended":
				return steps, nil
			case "training_failed":
				msg, _ := ev.Data["error_message"].(string)
				if msg == "" {
					msg = "training failed"
				}
				return nil, errors.New(msg)
			}
		}
	}
}

// EventsAfter reads every event after the cursor (all of them when it is
// empty), following has_more page by page.
func (c *Client) EventsAfter(ctx context.Context, endpoint, after string) ([]Event, error) {
	var all []Event
	for {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		var page eventPage
		if err := c.Do(ctx, http.MethodGet, endpoint+"?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		if !page.HasMore || len(page.Data) == 0 {
			return all, nil
		}
		after = page.Data[len(page.Data)-1].ID
	}
}

// bar draws a text progress bar.
func bar(done, total, width int) string {
	if total <= 0 {
		total = 1
	}
	n := min(width, done*width/total)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// formatMetrics prints the named metrics that are present, in order.
func formatMetrics(m map[string]any, names ...string) string {
	var parts []string
	for _, k := range names {
		if v, ok := m[k].(float64); ok {
			parts = append(parts, fmt.Sprintf("%s=%.4g", k, v))
		}
	}
	return strings.Join(parts, " ")
}

func intOf(v any) int {
	f, _ := v.(float64)
	return int(f)
}
