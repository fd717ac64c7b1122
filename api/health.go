package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// health answers while the process serves: GET /v1/health.
func (s *Server) health(c *gin.Context) {
	s.writeJSON(c, http.StatusOK, gin.H{"status": "ok"})
}

// checkResult is one component's state in /v1/system-check.
type checkResult struct {
	Success  bool    `json:"success"`
	Duration float64 `json:"duration"` // milliseconds
	Error    *string `json:"error"`
}

// maxCheckError bounds the error text of one probe in the report.
const maxCheckError = 300

// systemCheck probes every configured component concurrently, each within
// Config.SystemCheckTimeout: GET /v1/system-check. The body has "api": true
// and one {success, duration, error} per probe; any failure makes it a 503.
// "base_models" lists what models may be created on (built-in models and the
// snapshots of the models directory) when the configuration names them.
// The route needs no key, so a failure reads as a fixed text naming the
// component (publicCheckError); the error itself, which may hold a DSN, a
// user, a database name, a host or a port, goes to the log.
func (s *Server) systemCheck(c *gin.Context) {
	results := make([]checkResult, len(s.deps.Checks))
	errs := make([]error, len(s.deps.Checks))
	var wg sync.WaitGroup
	for i, hc := range s.deps.Checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.probe(c.Request.Context(), hc)
		}()
	}
	wg.Wait()
	body := gin.H{"api": true}
	if len(s.cfg.BaseModels) > 0 {
		body["base_models"] = s.cfg.BaseModels
	}
	status := http.StatusOK
	for i, hc := range s.deps.Checks {
		body[hc.Name] = results[i]
		if !results[i].Success {
			status = http.StatusServiceUnavailable
			s.requestLog(c).Warn("system check failed", zap.String("check", hc.Name), zap.Error(errs[i]))
		}
	}
	s.writeJSON(c, status, body)
}

// probe runs one check and returns its public result and its error. A
// check that ignores its deadline is abandoned at the timeout (it finishes
// in the background); one that panics fails.
func (s *Server) probe(parent context.Context, hc HealthCheck) (checkResult, error) {
	ctx, cancel := context.WithTimeout(parent, s.cfg.SystemCheckTimeout)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if rec := recover(); rec != nil {
				done <- fmt.Errorf("%w: %v", errCheckPanicked, rec)
			}
		}()
		done <- hc.Check(ctx)
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = fmt.Errorf("%w after %s", errCheckTimedOut, s.cfg.SystemCheckTimeout)
	}
	r := checkResult{Success: err == nil, Duration: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		msg := s.publicCheckError(hc.Name, err)
		if len(msg) > maxCheckError {
			msg = strings.ToValidUTF8(msg[:maxCheckError], "") + "..."
		}
		r.Error = &msg
	}
	return r, err
}

var (
	errCheckTimedOut = errors.New("timed out")
	errCheckPanicked = errors.New("check panicked")
)

// publicCheckError is what a caller without a key reads of a failed check
// named name: that it timed out, a condition trainyard itself stated (a
// *trainyard.Error with no cause under it, e.g. "no worker is polling this
// task queue"), or else "<name> unavailable" and nothing of the cause:
// drivers write hosts, ports, users and database names into their errors.
func (s *Server) publicCheckError(name string, err error) string {
	var e *trainyard.Error
	switch {
	case errors.Is(err, errCheckTimedOut), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("timed out after %s", s.cfg.SystemCheckTimeout)
	case errors.Is(err, errCheckPanicked):
		return errCheckPanicked.Error()
	case errors.As(err, &e) && e.Err == nil && e.Code != trainyard.EINTERNAL:
		return e.Message
	}
	return name + " unavailable"
}
