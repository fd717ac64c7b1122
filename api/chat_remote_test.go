package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/inference"
)

// forwardedAnswer is what recordingRouter answers: a chat.completion, as
// an inference process would.
const forwardedAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[],` +
	`"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`

// recordingRouter stands in for inference.Router: it keeps each call and
// answers as told.
type recordingRouter struct {
	calls []inference.Call
	err   error
}

func (r *recordingRouter) Forward(_ context.Context, w http.ResponseWriter, c inference.Call) error {
	r.calls = append(r.calls, c)
	if r.err != nil {
		return r.err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(forwardedAnswer))
	return nil
}

func TestRemoteChatValidatesThenForwards(t *testing.T) {
	t.Parallel()
	router := &recordingRouter{}
	e := newEnv(t, func(_ *api.Config, d *api.Deps) { d.ChatRouter = router })

	// A bad request is answered here, never forwarded.
	if res := e.call("POST", "/v1/chat/completions", `{"messages": [], "n": 99}`); res.Status != http.StatusUnprocessableEntity {
		t.Fatalf("bad request: %d %s", res.Status, res.Body)
	}
	if res := e.call("POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`, as("nope")); res.Status != http.StatusUnauthorized {
		t.Fatalf("bad key: %d", res.Status)
	}
	if len(router.calls) != 0 {
		t.Fatalf("forwarded %d bad requests", len(router.calls))
	}

	// A good one goes as sent, with the caller's key and the request id.
	body := `{"model": "wandb-artifact:///team-a/p/m:step3", "messages": [{"role": "user", "content": "hi"}], "stream": true}`
	res := e.call("POST", "/v1/chat/completions/", body, header("X-Request-ID", "req-1"))
	if res.Status != 200 || string(res.Body) != forwardedAnswer || len(router.calls) != 1 {
		t.Fatalf("forward: %d %s (%d calls)", res.Status, res.Body, len(router.calls))
	}
	c := router.calls[0]
	if c.AccountID != e.acct.ID || c.Model != "wandb-artifact:///team-a/p/m:step3" || string(c.Body) != body ||
		c.Path != "/v1/chat/completions/" || c.Header.Get("Authorization") != "Bearer "+e.key ||
		c.Header.Get("X-Request-ID") != "req-1" || c.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("call = %+v", c)
	}

	// No model: the API's default is named, so every process agrees.
	e.call("POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "model": null}`)
	var sent map[string]any
	if err := json.Unmarshal(router.calls[1].Body, &sent); err != nil || sent["model"] != testBaseModels[0] ||
		router.calls[1].Model != testBaseModels[0] {
		t.Fatalf("default model: %s", router.calls[1].Body)
	}

	// The router's errors are the API's: 503 with Retry-After, 404.
	router.err = trainyard.Errorf(trainyard.EUNAVAILABLE, "No inference process serving the base model `x` is available right now; retry later.")
	res = e.call("POST", "/v1/chat/completions", `{"model": "x", "messages": [{"role": "user", "content": "hi"}]}`)
	if res.Status != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
		res.JSON(t)["detail"] != "No inference process serving the base model `x` is available right now; retry later." {
		t.Fatalf("no holder: %d %v %s", res.Status, res.Header, res.Body)
	}
}

func TestInferenceOnlyServesChatAndProbes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *api.Config, d *api.Deps) { c.InferenceOnly, d.ChatRouter = true, &recordingRouter{} })
	if res := e.call("GET", "/v1/health", nil); res.Status != 200 {
		t.Fatalf("health: %d", res.Status)
	}
	if res := e.call("POST", "/v1/preview/models", `{"project": "p", "name": "m", "base_model": "trainyard/tiny-chat"}`); res.Status != http.StatusNotFound {
		t.Fatalf("models route on an inference process: %d", res.Status)
	}
	if res := e.call("POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`, as("")); res.Status != http.StatusUnauthorized {
		t.Fatalf("chat without a key: %d", res.Status)
	}
}
