// Package trainingapi is the small client of the W&B Training HTTP API that
// the examples share: plain net/http and JSON, the requests any ART- or
// OpenAI-style client sends, and nothing of trainyard itself, so the
// examples use the service exactly as an outside user would.
package trainingapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls the trainyard HTTP API: plain net/http and JSON, the same
// requests any OpenAI- or ART-style client sends.
type Client struct {
	baseURL string // ends in /v1
	apiKey  string
	http    *http.Client
}

// NewClient returns a client of the API at baseURL (ending in /v1).
func NewClient(baseURL, apiKey string) *Client {
	return &Client{
		baseURL: strings.TrimRight(baseURL, "/"),
		apiKey:  apiKey,
		http:    &http.Client{Timeout: 5 * time.Minute},
	}
}

// APIError is a non-2xx answer. The API answers {"detail": "message"} or,
// for validation errors, {"detail": [{"loc": [...], "msg": "..."}]}.
type APIError struct {
	Method, Path string
	Status       int
	Detail       string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Detail)
}

// Do sends in as the JSON body (nil: no body) and decodes the answer into
// out (nil: ignore it).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
	}
	return c.Send(ctx, method, path, "application/json", body, out)
}

// Send sends a body of the given content type and decodes the JSON answer
// into out. GETs are retried on network errors and 5xx, as the ART client
// does; POSTs are not (they carry no idempotency key). Any request answered
// 429 is retried, as OpenAI's clients do: the service did nothing with it,
// so sending it again is safe. The wait is the answer's Retry-After when it
// has one, else a backoff that doubles.
func (c *Client) Send(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	attempts := 1
	if method == http.MethodGet {
		attempts = 3
	}
	var err error
	limited := 0
	for i := 0; ; i++ {
		var wait time.Duration
		var retry bool
		retry, wait, err = c.once(ctx, method, path, contentType, body, out)
		var apiErr *APIError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests && limited < maxLimitedRetries:
			limited++
			if wait <= 0 {
				wait = time.Duration(1<<min(limited, 5)) * 250 * time.Millisecond
			}
		case retry && i+1 < attempts:
			wait = time.Duration(i+1) * 500 * time.Millisecond
		default:
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
	}
}

// maxLimitedRetries bounds the retries of a request answered 429.
const maxLimitedRetries = 10

// once sends the request once; retry says whether a failure may pass (a
// network error or 5xx), and wait is the answer's Retry-After, if any.
func (c *Client) once(ctx context.Context, method, path, contentType string, body []byte, out any) (retry bool, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return ctx.Err() == nil, 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return true, 0, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
			wait = time.Duration(secs) * time.Second
		}
		return resp.StatusCode >= 500, wait, &APIError{Method: method, Path: path, Status: resp.StatusCode, Detail: detailOf(raw)}
	}
	if out == nil {
		return false, 0, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, 0, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return false, 0, nil
}

// detailOf turns an error body into one line.
func detailOf(raw []byte) string {
	var e struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &e) != nil || len(e.Detail) == 0 {
		return strings.TrimSpace(string(raw))
	}
	var msg string
	if json.Unmarshal(e.Detail, &msg) == nil {
		return msg
	}
	var list []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(e.Detail, &list) == nil {
		parts := make([]string, len(list))
		for i, d := range list {
			parts[i] = fmt.Sprintf("%v: %s", d.Loc, d.Msg)
		}
		return strings.Join(parts, "; ")
	}
	return string(e.Detail)
}

// Model is the answer of POST /v1/preview/models.
type Model struct {
	ID        string `json:"id"`
	Entity    string `json:"entity"`
	Project   string `json:"project"`
	Name      string `json:"name"`
	BaseModel string `json:"base_model"`
}

// RegisterModel creates the model or returns the existing one, sending all
// five keys as the ART client does.
func (c *Client) RegisterModel(ctx context.Context, project, name, base string) (*Model, error) {
	var m Model
	err := c.Do(ctx, http.MethodPost, "/preview/models", map[string]any{
		"entity": nil, "project": project, "name": name, "base_model": base, "return_existing": true,
	}, &m)
	return &m, err
}

// NewestStep is the step of the model's newest checkpoint, 0 (the base
// model) when it has none.
func (c *Client) NewestStep(ctx context.Context, modelID string) (int, error) {
	var page struct {
		Data []struct {
			Step int `json:"step"`
		} `json:"data"`
	}
	path := "/preview/models/" + url.PathEscape(modelID) + "/checkpoints?limit=1&order=desc"
	if err := c.Do(ctx, http.MethodGet, path, nil, &page); err != nil {
		return 0, err
	}
	if len(page.Data) == 0 {
		return 0, nil
	}
	return page.Data[0].Step, nil
}

// Job is GET /v1/preview/training-jobs/{id}: status and progress.
type Job struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	CurrentStep int    `json:"current_step"`
	TotalSteps  int    `json:"total_steps"`
}

// GetJob reads a training job's status and progress.
func (c *Client) GetJob(ctx context.Context, id string) (*Job, error) {
	var j Job
	err := c.Do(ctx, http.MethodGet, "/preview/training-jobs/"+url.PathEscape(id), nil, &j)
	return &j, err
}

// LogGroups stores scored trajectory groups under a split ("val") and
// returns the metrics the service computed.
func (c *Client) LogGroups(ctx context.Context, modelID, split string, groups any) (map[string]float64, error) {
	var out struct {
		Metrics map[string]float64 `json:"metrics"`
	}
	err := c.Do(ctx, http.MethodPost, "/preview/models/"+url.PathEscape(modelID)+"/log", map[string]any{
		"model_id": modelID, "split": split, "trajectory_groups": groups,
	}, &out)
	return out.Metrics, err
}
