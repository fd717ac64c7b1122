package dashboard_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// client calls the public API as the test's user, to set up what the
// browser then looks at.
type client struct {
	t    testing.TB
	base string // http://127.0.0.1:port/v1
	key  string
}

// call sends a JSON body (or raw bytes) and decodes the JSON answer,
// failing the test on any status but 200.
func (c *client) call(method, path string, body any) map[string]any {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		c.t.Fatalf("%s %s: %v\n%s", method, path, err, raw)
	}
	return out
}

// model creates a model on the built-in base model and returns its id.
func (c *client) model(name string) string {
	c.t.Helper()
	return c.call("POST", "/preview/models", map[string]any{
		"project": "dashboard", "name": name, "base_model": "trainyard/tiny-chat", "return_existing": true,
	})["id"].(string)
}

// facts are conversations an SFT job learns from.
var facts = []string{
	`{"messages":[{"role":"user","content":"What is the yard called?"},{"role":"assistant","content":"Maple Junction."}]}`,
	`{"messages":[{"role":"user","content":"Who runs the yard?"},{"role":"assistant","content":"Ada the dispatcher."}]}`,
	`{"messages":[{"role":"user","content":"When do trains leave?"},{"role":"assistant","content":"Every hour."}]}`,
	`{"messages":[{"role":"user","content":"What colour is the engine?"},{"role":"assistant","content":"Forest green."}]}`,
}

// sft uploads the facts and starts an SFT job of one example per step
// for epochs epochs (4 × epochs gradient steps); it returns the job's id.
func (c *client) sft(modelID, name string, epochs int) string {
	c.t.Helper()
	up := c.call("POST", "/preview/files?project=dashboard&name="+name, []byte(strings.Join(facts, "\n")+"\n"))
	return c.call("POST", "/preview/sft-training-jobs", map[string]any{
		"model_id": modelID, "training_data_url": up["url"],
		"config":              map[string]any{"batch_size": 1, "learning_rate": 3e-3},
		"experimental_config": map[string]any{"num_epochs": epochs},
	})["id"].(string)
}

// rl starts a one-step RL job on a group of two scored answers.
func (c *client) rl(modelID string) string {
	c.t.Helper()
	choice := func(answer string, reward float64) map[string]any {
		return map[string]any{"reward": reward, "messages_and_choices": []any{
			map[string]any{"role": "user", "content": "What is 2+3?"},
			map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": answer}},
		}}
	}
	return c.call("POST", "/preview/training-jobs", map[string]any{
		"model_id":            modelID,
		"trajectory_groups":   []any{map[string]any{"trajectories": []any{choice("5", 1), choice("6", 0)}}},
		"experimental_config": map[string]any{"learning_rate": 1e-3, "allow_training_without_logprobs": true},
	})["id"].(string)
}

// waitJob polls the job until it has one of the statuses.
func (c *client) waitJob(id string, timeout time.Duration, statuses ...string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		job := c.call("GET", "/preview/training-jobs/"+id, nil)
		for _, s := range statuses {
			if job["status"] == s {
				return job
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("job %s is %v after %v, want one of %v", id, job["status"], timeout, statuses)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// js quotes s as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sprintf is fmt.Sprintf, for JavaScript expressions built from values.
func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
