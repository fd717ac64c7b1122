package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.temporal.io/sdk/temporal"
)

// download GETs http(s) training data. A server that stops sending (no
// response, or a body that stalls) for Config.DownloadStallTimeout fails
// the attempt with a retryable error: Prepare heartbeats throughout, so
// without this a server that accepts the connection and never answers
// would hold one of the worker's few compute slots for the whole
// start-to-close timeout of every attempt, stalling every other job.
func (a *Activities) download(ctx context.Context, raw string) (io.ReadCloser, error) {
	window := a.cfg.DownloadStallTimeout
	stalled := fmt.Errorf("training_data_url sent nothing for %s", window)
	ctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(window, func() { cancel(stalled) })
	fail := func(err error) (io.ReadCloser, error) {
		timer.Stop()
		cancel(nil)
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return fail(invalidf("training_data_url: %v", err))
	}
	resp, err := a.d.HTTP.Do(req)
	switch {
	case err != nil && dialRefused(err):
		return fail(invalidf("%v", ErrRefusedAddress))
	case err != nil:
		if errors.Is(context.Cause(ctx), stalled) {
			err = stalled
		}
		return fail(&fromDataServer{fmt.Errorf("download training data: %w", err)}) // retried: the host may come back
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		msg := fmt.Sprintf("training_data_url answered HTTP %d", resp.StatusCode)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return fail(errors.New(msg))
		}
		return fail(temporal.NewNonRetryableApplicationError(msg, ErrInvalidInput, nil))
	}
	timer.Reset(window)
	return &stallReader{body: resp.Body, ctx: ctx, cancel: cancel, timer: timer, window: window, stalled: stalled}, nil
}

// stallReader restarts the stall timer whenever body yields bytes, and
// reports a cancellation by that timer as the stall it is.
type stallReader struct {
	body    io.ReadCloser
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	window  time.Duration
	stalled error
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 {
		s.timer.Reset(s.window)
	}
	if err != nil && !errors.Is(err, io.EOF) && errors.Is(context.Cause(s.ctx), s.stalled) {
		err = s.stalled
	}
	return n, err
}

func (s *stallReader) Close() error {
	s.timer.Stop()
	s.cancel(nil)
	return s.body.Close()
}

// fromDataServer marks a failure to reach the server a training_data_url
// names, as opposed to a failure of the platform's own dependencies (the
// object store holding an upload, the database): only the first can be the
// user's mistake.
type fromDataServer struct{ err error }

func (e *fromDataServer) Error() string { return e.err.Error() }
func (e *fromDataServer) Unwrap() error { return e.err }
