package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// statusClientClosed is logged when the client went away before the
// answer (nginx's convention); the client never sees it.
const statusClientClosed = 499

// internalMessage is the only text a client sees for an internal error.
const internalMessage = "Internal Server Error"

// statusOf maps a trainyard error code to its HTTP status.
func statusOf(code string) int {
	switch code {
	case trainyard.ENOTFOUND:
		return http.StatusNotFound
	case trainyard.ECONFLICT:
		return http.StatusConflict
	case trainyard.EINVALID:
		return http.StatusUnprocessableEntity
	case trainyard.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case trainyard.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case trainyard.ELIMIT:
		return http.StatusTooManyRequests
	case trainyard.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case trainyard.EBADREQUEST:
		return http.StatusBadRequest
	case trainyard.ETIMEOUT:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// writeError answers err. A *validate.ValidationError is a FastAPI 422; a
// trainyard error gets its code's status and its client-safe message as
// {"detail": message}; anything else is a 500 whose cause is logged, never
// sent.
func (s *Server) writeError(c *gin.Context, err error) {
	var ve *validate.ValidationError
	if errors.As(err, &ve) {
		s.writeJSON(c, http.StatusUnprocessableEntity, gin.H{"detail": ve.Detail})
		return
	}
	log := s.requestLog(c)
	if c.Request.Context().Err() != nil && errors.Is(err, context.Canceled) {
		log.Info("client went away", zap.Error(err))
		c.AbortWithStatus(statusClientClosed)
		return
	}
	code := trainyard.ErrorCode(err)
	msg := trainyard.ErrorMessage(err)
	if errors.Is(err, context.DeadlineExceeded) && code == trainyard.EINTERNAL {
		code, msg = trainyard.EUNAVAILABLE, "The request timed out."
	}
	status := statusOf(code)
	switch code {
	case trainyard.EINTERNAL:
		log.Error("internal error", zap.Error(err))
		msg = internalMessage
	case trainyard.EUNAVAILABLE:
		log.Warn("dependency unavailable", zap.Error(err))
		// An outage passes; a client that honours Retry-After comes back
		// instead of hammering.
		c.Header("Retry-After", "5")
	case trainyard.EUNAUTHORIZED:
		c.Header("WWW-Authenticate", "Bearer")
	case trainyard.ELIMIT:
		// Past a full admission queue or a long wait: OpenAI's clients honour Retry-After before retrying.
		log.Info("request refused at a limit", zap.Error(err))
		c.Header("Retry-After", "1")
	case trainyard.EINVALID:
		// The document promises HTTPValidationError for every 422, so a
		// store's EINVALID becomes a one-item list without a location.
		s.writeJSON(c, status, gin.H{"detail": []validate.Error{{
			Type: "value_error", Loc: []any{}, Msg: "Value error, " + msg,
			Ctx: map[string]any{"error": msg},
		}}})
		return
	}
	s.writeDetail(c, status, msg)
}

// writeDetail answers with FastAPI's HTTPException shape {"detail": msg}.
func (s *Server) writeDetail(c *gin.Context, status int, msg string) {
	s.writeJSON(c, status, gin.H{"detail": msg})
}

// writeJSON writes v as the JSON response and aborts the handler chain.
// HTML characters are not escaped: the API serves JSON clients only.
func (s *Server) writeJSON(c *gin.Context, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	body := []byte(nil)
	if err := enc.Encode(v); err != nil {
		// Only a bug (say a NaN in a response) gets here.
		s.requestLog(c).Error("encode response", zap.Error(err))
		status, body = http.StatusInternalServerError, []byte(`{"detail":"`+internalMessage+`"}`)
	} else {
		body = bytes.TrimRight(b.Bytes(), "\n")
	}
	c.Abort()
	s.extendWrite(c)
	c.Data(status, "application/json", body)
}
