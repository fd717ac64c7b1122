package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// download GETs http(s) training data. Its failures, and those of reading
// the body, are classified as they happen (dataServerFailure). A server
// that stops sending (no response, or a body that stalls) for
// Config.DownloadStallTimeout fails the attempt, retryably: Prepare
// heartbeats throughout, so
// without this a server that accepts the connection and never answers
// would hold one of the worker's few compute slots for the whole
// start-to-close timeout of every attempt, stalling every other job.
func (a *Activities) download(ctx context.Context, raw string) (io.ReadCloser, error) {
	window := a.cfg.DownloadStallTimeout
	stalled := &stallError{window: window}
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
	if err != nil {
		if errors.Is(context.Cause(ctx), stalled) {
			err = fmt.Errorf("%w: %w", stalled, err)
		}
		return fail(dataServerFailure(fmt.Errorf("download training data: %w", err)))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fail(dataServerFailure(httpStatusError(resp.StatusCode)))
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
	stalled *stallError
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 {
		s.timer.Reset(s.window)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if errors.Is(context.Cause(s.ctx), s.stalled) {
			err = fmt.Errorf("%w: %w", s.stalled, err)
		}
		err = dataServerFailure(fmt.Errorf("read training_data_url: %w", err))
	}
	return n, err
}

func (s *stallReader) Close() error {
	s.timer.Stop()
	s.cancel(nil)
	return s.body.Close()
}
