package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/inference"
)

// forwardedHeaders are the request fields an inference process gets: the
// caller's credentials (it authenticates the request again, so it never
// trusts the network or a shared secret), the body's type and what the
// client accepts.
var forwardedHeaders = []string{"Authorization", "Content-Type", "Accept"}

// chatCompletionsRemote is POST /v1/chat/completions when chat runs in
// `trainyard infer` processes: the request is validated here with the same
// parser (a bad one never costs an inference process anything), then the
// router picks a process holding the model's base model and copies its
// answer back unchanged. 404 (model), 400 (context), 429 (the process's
// concurrency limits) and the answer itself come from that process; 503
// when no live process holds the base model.
func (s *Server) chatCompletionsRemote(c *gin.Context) {
	var errs validate.Errors
	root, raw, err := s.decodeBodyRaw(c, &errs)
	if err != nil {
		s.writeError(c, err)
		return
	}
	req, opt := s.parseChatRequest(root)
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	if opt.defaultModel {
		// Processes have defaults of their own: name the API's.
		if raw, err = withModel(raw, req.Model); err != nil {
			s.writeError(c, err)
			return
		}
	}
	h := http.Header{}
	for _, k := range forwardedHeaders {
		if v := c.GetHeader(k); v != "" {
			h.Set(k, v)
		}
	}
	h.Set(headerRequestID, c.GetString(keyRequestID)) // one id in the logs of both processes
	err = s.deps.ChatRouter.Forward(c.Request.Context(), c.Writer, inference.Call{
		AccountID: accountOf(c).ID, Model: req.Model, Path: c.Request.URL.Path, Header: h, Body: raw})
	if err != nil {
		s.writeError(c, err)
	}
}

// withModel returns the JSON object body with its model field set.
func withModel(raw []byte, model string) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("chat body: %w", err)
	}
	m, err := json.Marshal(model)
	if err != nil {
		return nil, fmt.Errorf("chat body: %w", err)
	}
	fields["model"] = m
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("chat body: %w", err)
	}
	return out, nil
}
