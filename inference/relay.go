package inference

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// Call is one chat completion to forward.
type Call struct {
	// AccountID is the authenticated account: a trained model's name is
	// resolved among its models.
	AccountID string
	// Model is the request's model, a base model or a trained model's name.
	Model string
	// Path is the request's path (/v1/chat/completions, with or without its
	// trailing slash); the process serves the same routes.
	Path string
	// Header is sent as is: the caller's Authorization (the process
	// authenticates the request again), Content-Type and X-Request-ID.
	Header http.Header
	// Body is the request body as the client sent it.
	Body []byte
}

// Messages of the answers the router writes itself.
const (
	msgLostBeforeAnswer = "The inference process serving this request stopped before it answered; retry the request."
	msgLostStream       = "The inference process serving this stream stopped; retry the request."
)

// eventEnd is the blank line that ends a server-sent event (the API writes
// LF line ends).
var eventEnd = []byte("\n\n")

// maxPendingEvent bounds the bytes of one event held back until its end
// arrives; past it they are sent as they are.
const maxPendingEvent = 4 << 20

// Forward resolves c's base model, picks a live process holding it and
// copies that process's answer to w unchanged: status, headers and body,
// each server-sent event flushed as it arrives. It returns an error only
// before anything was written: EUNAVAILABLE when no live process holds the
// base model (or none could be reached, or the one chosen stopped before
// answering), ENOTFOUND for a model the account does not have. A process
// that stops mid-stream ends the stream with an error event.
//
// Only a failure to connect moves a request to the next holder: then it
// provably never reached a process. A process that stopped after it got the
// request may have been generating, so the client decides whether to retry.
func (r *Router) Forward(ctx context.Context, w http.ResponseWriter, c Call) error {
	procs, err := r.processes(ctx)
	if err != nil {
		return err
	}
	base, err := r.baseOf(ctx, c.AccountID, c.Model, procs)
	if err != nil {
		return err
	}
	log := r.log.With(zap.String("request_id", c.Header.Get("X-Request-ID")), zap.String("base_model", base))
	affinity := ""
	if c.Model != base {
		affinity = c.AccountID + "\x00" + c.Model
	}
	for _, p := range r.pick(procs, base, affinity) {
		plog := log.With(zap.String("process", p.ID), zap.String("address", p.Address))
		cctx, done := r.track(ctx, p.ID)
		resp, err := r.send(cctx, p.Address, c)
		var de *dialError
		switch {
		case err != nil && ctx.Err() == nil && errors.As(err, &de):
			done()
			r.markDown(p)
			telemetry.ChatRouted.WithLabelValues("connect_failed").Inc()
			plog.Warn("inference process refused the connection; trying the next", zap.Error(err))
			continue
		case err != nil:
			done()
			return lost(ctx, cctx, plog, err)
		}
		telemetry.ChatRouted.WithLabelValues("forwarded").Inc()
		r.remember(affinity, p.ID)
		err = r.relay(ctx, cctx, w, resp, plog)
		done()
		return err
	}
	telemetry.ChatRouted.WithLabelValues("no_process").Inc()
	return trainyard.Errorf(trainyard.EUNAVAILABLE,
		"No inference process serving the base model `%s` is available right now; retry later.", base)
}

// send posts the call to the process at address.
func (r *Router) send(ctx context.Context, address string, c Call) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(address, "/")+c.Path, bytes.NewReader(c.Body))
	if err != nil {
		return nil, fmt.Errorf("inference request to %s: %w", address, err)
	}
	req.Header = c.Header.Clone()
	return r.client.Do(req)
}

// lost classifies a failure of a call before its answer was written: the
// client's own cancellation stays a cancellation (the API logs it as a
// client that went away); anything else means the process stopped.
func lost(ctx, cctx context.Context, log *zap.Logger, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("forward chat completion: %w", ctx.Err())
	}
	telemetry.ChatRouted.WithLabelValues("lost").Inc()
	log.Warn("inference process stopped before answering", zap.Error(err), zap.NamedError("cause", context.Cause(cctx)))
	return trainyard.WrapError(trainyard.EUNAVAILABLE, err, msgLostBeforeAnswer)
}

// relay writes the process's answer. A non-streamed answer is read whole
// first, so a process that stops while sending it still gets the client a
// clean 503; an event stream is sent on event by event.
func (r *Router) relay(ctx, cctx context.Context, w http.ResponseWriter, resp *http.Response, log *zap.Logger) error {
	defer resp.Body.Close()
	rc := http.NewResponseController(w)
	if !isEventStream(resp.Header) {
		body, err := io.ReadAll(io.LimitReader(resp.Body, r.cfg.MaxAnswerBytes+1))
		if err != nil {
			return lost(ctx, cctx, log, err)
		}
		if int64(len(body)) > r.cfg.MaxAnswerBytes {
			return fmt.Errorf("inference answer larger than %d bytes", r.cfg.MaxAnswerBytes)
		}
		copyHeader(w.Header(), resp.Header)
		r.extendWrite(rc)
		w.WriteHeader(resp.StatusCode)
		if _, err := w.Write(body); err != nil {
			log.Info("chat answer: client went away", zap.Error(err))
		}
		return nil
	}
	copyHeader(w.Header(), resp.Header)
	r.extendWrite(rc)
	w.WriteHeader(resp.StatusCode)
	if err := rc.Flush(); err != nil {
		log.Info("chat stream: client went away", zap.Error(err))
		return nil
	}
	err := r.copyEvents(w, rc, resp.Body)
	var we *writeError
	switch {
	case err == nil:
	case ctx.Err() != nil || errors.As(err, &we):
		log.Info("chat stream: client went away", zap.Error(err))
	default:
		telemetry.ChatRouted.WithLabelValues("lost").Inc()
		log.Warn("inference process stopped mid-stream", zap.Error(err), zap.NamedError("cause", context.Cause(cctx)))
		if err := r.write(w, rc, errorEvent(msgLostStream)); err != nil {
			log.Info("chat stream: client went away", zap.Error(err))
		}
	}
	return nil
}

// writeError is a failed write to the client.
type writeError struct{ err error }

func (e *writeError) Error() string { return "write to client: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// copyEvents sends the body on, each complete event (up to its blank line)
// as soon as it is in, and returns nil at the stream's clean end. An event
// cut short by a failure is never sent, so the client sees whole events
// followed by the router's error event.
func (r *Router) copyEvents(w http.ResponseWriter, rc *http.ResponseController, body io.Reader) error {
	buf := make([]byte, 32<<10)
	var pending []byte
	for {
		n, err := body.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			end := 0
			if i := bytes.LastIndex(pending, eventEnd); i >= 0 {
				end = i + len(eventEnd)
			}
			if len(pending) > maxPendingEvent {
				end = len(pending)
			}
			if end > 0 {
				if err := r.write(w, rc, pending[:end]); err != nil {
					return err
				}
				pending = append(pending[:0], pending[end:]...)
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			if len(pending) > 0 {
				return r.write(w, rc, pending)
			}
			return nil
		case err != nil:
			return fmt.Errorf("read inference stream: %w", err)
		}
	}
}

// write sends b and flushes it, with a fresh write deadline.
func (r *Router) write(w http.ResponseWriter, rc *http.ResponseController, b []byte) error {
	r.extendWrite(rc)
	if _, err := w.Write(b); err != nil {
		return &writeError{err}
	}
	if err := rc.Flush(); err != nil {
		return &writeError{err}
	}
	return nil
}

func (r *Router) extendWrite(rc *http.ResponseController) {
	if r.cfg.WriteTimeout > 0 {
		// Not every writer has deadlines (httptest's recorder has none).
		_ = rc.SetWriteDeadline(time.Now().Add(r.cfg.WriteTimeout))
	}
}

// errorEvent is an OpenAI-style error event, as the API's own streams end
// on a failure after their 200.
func errorEvent(msg string) []byte {
	var b bytes.Buffer
	b.WriteString("data: ")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{"error": map[string]any{"message": msg, "type": trainyard.EUNAVAILABLE,
		"code": http.StatusServiceUnavailable}})
	b.WriteString("\n")
	return b.Bytes()
}

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// hopHeaders belong to one connection and are never copied (RFC 9110 7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// copyHeader sets dst's fields to src's, hop-by-hop fields left out.
func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = append([]string(nil), v...)
	}
	for _, k := range hopHeaders {
		dst.Del(k)
	}
}
