package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client calls the trainyard HTTP API: plain net/http and JSON, the same
// requests any OpenAI- or ART-style client sends.
type client struct {
	baseURL string // ends in /v1
	apiKey  string
	http    *http.Client
}

func newClient(baseURL, apiKey string) *client {
	return &client{
		baseURL: strings.TrimRight(baseURL, "/"),
		apiKey:  apiKey,
		http:    &http.Client{Timeout: 5 * time.Minute},
	}
}

// apiError is a non-2xx answer. The API answers {"detail": "message"} or,
// for validation errors, {"detail": [{"loc": [...], "msg": "..."}]}.
type apiError struct {
	Method, Path string
	Status       int
	Detail       string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Detail)
}

// do sends in as the JSON body (nil: no body) and decodes the answer into
// out (nil: ignore it).
func (c *client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
	}
	return c.send(ctx, method, path, "application/json", body, out)
}

// send sends a body of the given content type and decodes the JSON answer
// into out. GETs are retried on network errors and 5xx, as the ART client
// does; POSTs never are (they carry no idempotency key).
func (c *client) send(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	attempts := 1
	if method == http.MethodGet {
		attempts = 3
	}
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			time.Sleep(time.Duration(i) * 500 * time.Millisecond)
		}
		var retry bool
		if retry, err = c.once(ctx, method, path, contentType, body, out); err == nil || !retry {
			return err
		}
	}
	return err
}

func (c *client) once(ctx context.Context, method, path, contentType string, body []byte, out any) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return true, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode >= 500, &apiError{Method: method, Path: path, Status: resp.StatusCode, Detail: detailOf(raw)}
	}
	if out == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return false, nil
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

// model is the answer of POST /v1/preview/models.
type model struct {
	ID        string `json:"id"`
	Entity    string `json:"entity"`
	Project   string `json:"project"`
	Name      string `json:"name"`
	BaseModel string `json:"base_model"`
}

// registerModel creates the model or returns the existing one, sending all
// five keys as the ART client does.
func (c *client) registerModel(ctx context.Context, project, name, base string) (*model, error) {
	var m model
	err := c.do(ctx, http.MethodPost, "/preview/models", map[string]any{
		"entity": nil, "project": project, "name": name, "base_model": base, "return_existing": true,
	}, &m)
	return &m, err
}

// newestStep is the step of the model's newest checkpoint, 0 (the base
// model) when it has none.
func (c *client) newestStep(ctx context.Context, modelID string) (int, error) {
	var page struct {
		Data []struct {
			Step int `json:"step"`
		} `json:"data"`
	}
	path := "/preview/models/" + url.PathEscape(modelID) + "/checkpoints?limit=1&order=desc"
	if err := c.do(ctx, http.MethodGet, path, nil, &page); err != nil {
		return 0, err
	}
	if len(page.Data) == 0 {
		return 0, nil
	}
	return page.Data[0].Step, nil
}

// job is GET /v1/preview/training-jobs/{id}: status and progress.
type job struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	CurrentStep int    `json:"current_step"`
	TotalSteps  int    `json:"total_steps"`
}

func (c *client) getJob(ctx context.Context, id string) (*job, error) {
	var j job
	err := c.do(ctx, http.MethodGet, "/preview/training-jobs/"+url.PathEscape(id), nil, &j)
	return &j, err
}
