package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/serving"
)

// chatChunk is OpenAI's chat.completion.chunk object.
type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chatUsage    `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int                       `json:"index"`
	Delta        chunkDelta                `json:"delta"`
	Logprobs     *trainyard.ChoiceLogprobs `json:"logprobs"`
	FinishReason *string                   `json:"finish_reason"`
}

type chunkDelta struct {
	Role string `json:"role,omitempty"`
	// ReasoningContent is vLLM's name for a reasoning delta, Reasoning the newer one; both are sent, as
	// in the message of a non-streamed answer.
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ToolCalls        []chunkToolCall `json:"tool_calls,omitempty"`
}

type chunkToolCall struct {
	Index    int                    `json:"index"`
	ID       string                 `json:"id"`
	Type     string                 `json:"type"`
	Function trainyard.FunctionCall `json:"function"`
}

// chunkOf converts a serving delta to one chunk choice.
func chunkOf(d serving.Delta) chunkChoice {
	ch := chunkChoice{Index: d.Index}
	if d.Reasoning != "" {
		ch.Delta.ReasoningContent, ch.Delta.Reasoning = &d.Reasoning, &d.Reasoning
	}
	if d.Content != "" {
		ch.Delta.Content = &d.Content
	}
	for _, tc := range d.ToolCalls {
		ch.Delta.ToolCalls = append(ch.Delta.ToolCalls, chunkToolCall{Index: tc.Index, ID: tc.ID, Type: tc.Type, Function: tc.Function})
	}
	if len(d.Logprobs) > 0 {
		ch.Logprobs = &trainyard.ChoiceLogprobs{Content: d.Logprobs}
	}
	if d.FinishReason != "" {
		ch.FinishReason = &d.FinishReason
	}
	return ch
}

// sseWriter writes server-sent events and flushes each one, so every token reaches the client at once.
type sseWriter struct {
	s   *Server
	c   *gin.Context
	buf bytes.Buffer
}

func (w *sseWriter) send(v any) error {
	w.buf.Reset()
	w.buf.WriteString("data: ")
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode chunk: %w", err)
	}
	w.buf.WriteString("\n") // Encode ended the line; a blank line ends the event
	return w.raw(w.buf.Bytes())
}

func (w *sseWriter) raw(b []byte) error {
	w.s.extendWrite(w.c) // each event gets its own deadline: a stream may last minutes
	if _, err := w.c.Writer.Write(b); err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	w.c.Writer.Flush()
	return nil
}

// streamChat answers with SSE: a role chunk per choice, a chunk per delta (reasoning, content or tool call, with the
// logprobs of its tokens), a finish chunk per choice, the usage chunk when asked, then [DONE]. A failure
// after the 200 has gone out is sent as an error event, which OpenAI clients raise.
func (s *Server) streamChat(c *gin.Context, gen *serving.Generation, meta chatMeta, n int, includeUsage bool) {
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // keep reverse proxies from buffering the stream
	c.Status(http.StatusOK)
	w := &sseWriter{s: s, c: c}
	chunk := func(choices ...chunkChoice) chatChunk {
		return chatChunk{ID: meta.id, Object: "chat.completion.chunk", Created: meta.created, Model: meta.model, Choices: choices}
	}
	empty := ""
	for i := 0; i < n; i++ {
		if err := w.send(chunk(chunkChoice{Index: i, Delta: chunkDelta{Role: "assistant", Content: &empty}})); err != nil {
			s.requestLog(c).Info("chat stream: client went away", zap.Error(err))
			return
		}
	}
	res, err := gen.Run(c.Request.Context(), func(d serving.Delta) error { return w.send(chunk(chunkOf(d))) })
	if err != nil {
		s.streamError(c, w, err)
		return
	}
	if includeUsage {
		last := chunk()
		last.Choices, last.Usage = []chunkChoice{}, newChatUsage(res.Usage)
		if err := w.send(last); err != nil {
			s.requestLog(c).Info("chat stream: client went away", zap.Error(err))
			return
		}
	}
	_ = w.raw([]byte("data: [DONE]\n\n"))
}

// streamError ends a stream that failed after it began.
func (s *Server) streamError(c *gin.Context, w *sseWriter, err error) {
	log := s.requestLog(c)
	if c.Request.Context().Err() != nil {
		log.Info("chat stream: client went away", zap.Error(err))
		return
	}
	code, msg := trainyard.ErrorCode(err), trainyard.ErrorMessage(err)
	if code == trainyard.EINTERNAL {
		log.Error("chat stream failed", zap.Error(err))
		msg = internalMessage
	}
	_ = w.send(gin.H{"error": gin.H{"message": msg, "type": code, "code": statusOf(code)}})
}
