package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/serving"
)

// chatCompletion is OpenAI's chat.completion object.
type chatCompletion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []trainyard.Choice `json:"choices"`
	Usage   chatUsage          `json:"usage"`
}

// chatUsage is OpenAI's usage object.
type chatUsage struct {
	PromptTokens        int                 `json:"prompt_tokens"`
	CompletionTokens    int                 `json:"completion_tokens"`
	TotalTokens         int                 `json:"total_tokens"`
	PromptTokensDetails promptTokensDetails `json:"prompt_tokens_details"`
}

// promptTokensDetails is OpenAI's (and the document's PromptTokenUsageInfo): the prompt tokens whose
// prefill was shared with another request with the same prompt.
type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func newChatUsage(u serving.Usage) *chatUsage {
	return &chatUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens: u.PromptTokens + u.CompletionTokens, PromptTokensDetails: promptTokensDetails{u.CachedPromptTokens}}
}

// chatCompletions is POST /v1/chat/completions (and its trailing-slash twin): validate, admit and prepare
// through serving (404, 400 and 429 are decided before any byte of the answer), then sample, answering
// one JSON object or an SSE stream. A client that hangs up cancels the request context, which stops
// sampling between tokens.
func (s *Server) chatCompletions(c *gin.Context) {
	var errs validate.Errors
	root, err := s.decodeBody(c, &errs)
	if err != nil {
		s.writeError(c, err)
		return
	}
	req, opt := s.parseChatRequest(root)
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	req.AccountID = accountOf(c).ID
	ctx := c.Request.Context()
	gen, err := s.deps.Chat.Start(ctx, req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	defer gen.Close()
	meta := chatMeta{id: serving.NewCompletionID(), created: time.Now().Unix(), model: req.Model}
	if opt.stream {
		s.streamChat(c, gen, meta, req.N, opt.includeUsage)
		return
	}
	res, err := gen.Run(ctx, nil)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.requestLog(c).Debug("chat completion", zap.String("model", req.Model),
		zap.Int("prompt_tokens", res.Usage.PromptTokens), zap.Int("completion_tokens", res.Usage.CompletionTokens))
	s.writeJSON(c, http.StatusOK, chatCompletion{ID: meta.id, Object: "chat.completion", Created: meta.created,
		Model: meta.model, Choices: res.Choices, Usage: *newChatUsage(res.Usage)})
}

// chatMeta is what every object of one answer repeats.
type chatMeta struct {
	id      string
	created int64
	model   string // as requested, like OpenAI
}
