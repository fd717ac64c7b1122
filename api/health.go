package api

import (
	"context"
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
func (s *Server) systemCheck(c *gin.Context) {
	results := make([]checkResult, len(s.deps.Checks))
	var wg sync.WaitGroup
	for i, hc := range s.deps.Checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.probe(c.Request.Context(), hc)
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
			s.requestLog(c).Warn("system check failed", zap.String("check", hc.Name), zap.String("error", *results[i].Error))
		}
	}
	s.writeJSON(c, status, body)
}

// probe runs one check. A check that ignores its deadline is abandoned at
// the timeout (it finishes in the background); one that panics fails.
func (s *Server) probe(parent context.Context, hc HealthCheck) checkResult {
	ctx, cancel := context.WithTimeout(parent, s.cfg.SystemCheckTimeout)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if rec := recover(); rec != nil {
				done <- fmt.Errorf("check panicked: %v", rec)
			}
		}()
		done <- hc.Check(ctx)
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = fmt.Errorf("timed out after %s", s.cfg.SystemCheckTimeout)
	}
	r := checkResult{Success: err == nil, Duration: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		msg := checkError(err)
		if len(msg) > maxCheckError {
			msg = strings.ToValidUTF8(msg[:maxCheckError], "") + "..."
		}
		r.Error = &msg
	}
	return r
}

// checkError is a probe's error as an operator reads it: a trainyard error
// on top reads "message: cause", without the "trainyard error: code=..."
// frame of its Error method.
func checkError(err error) string {
	e, ok := err.(*trainyard.Error) // on top only: a wrapped one keeps its wrapper's text
	if !ok {
		return err.Error()
	}
	if e.Err == nil {
		return e.Message
	}
	return e.Message + ": " + e.Err.Error()
}
