package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/serving/servingtest"
)

// FuzzChatRequest: whatever a client sends to /v1/chat/completions, the
// answer is one of the statuses the route documents (never a 5xx or a
// panic), and a 200 is a completion whose choices carry logprobs, checked
// against the OpenAPI document like every response of these tests.
func FuzzChatRequest(f *testing.F) {
	model := servingtest.BaseModel
	for _, s := range []string{
		`{"model":"` + model + `","messages":[{"role":"user","content":"Say hi."}],"max_tokens":4}`,
		`{"model":"` + model + `","messages":[{"role":"user","content":"Weather?"}],"max_tokens":8,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"tool_choice":"required"}`,
		`{"model":"` + model + `","messages":[{"role":"user","content":"JSON"}],"max_tokens":8,"response_format":{"type":"json_object"},"n":2,"seed":3,"top_logprobs":2}`,
		`{"model":"wandb-artifact:///x/y/z:step1","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"` + model + `","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`,
		`{"messages":[],"temperature":3}`, `{"model":"` + model + `","messages":[{"role":"user","content":"x"}],"max_tokens":100000}`,
		`[]`, `{"stream":true}`,
	} {
		f.Add(s)
	}
	e := newEnv(f, func(_ *api.Config, d *api.Deps) {
		d.Chat = serving.New(serving.Config{OpenBase: servingtest.OpenBase}, d.Models, d.Blobs, d.Logger)
	})
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(body, "stream") {
			return // an event stream is not one JSON document for the checks of call; chat_test covers streams
		}
		e.t = t
		res := e.call("POST", "/v1/chat/completions", body)
		switch res.Status {
		case http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge,
			http.StatusUnprocessableEntity, http.StatusTooManyRequests:
		default:
			t.Fatalf("status %d for %q: %s", res.Status, body, res.Body)
		}
	})
}
