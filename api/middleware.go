package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard/internal/telemetry"
)

// Keys of values the middleware keeps on the gin.Context.
const (
	keyRequestID = "trainyard.request_id"
	keyAccount   = "trainyard.account"
)

// headerRequestID carries the request id in both directions.
const headerRequestID = "X-Request-ID"

// requestID takes the client's X-Request-ID when it is a sensible token
// (so ids can be correlated across services) and otherwise makes one; it is
// echoed on the response and attached to every log line of the request.
func (s *Server) requestID(c *gin.Context) {
	id := c.GetHeader(headerRequestID)
	if !validRequestID(id) {
		id = uuid.NewString()
	}
	c.Set(keyRequestID, id)
	c.Header(headerRequestID, id)
	c.Next()
}

// validRequestID accepts 1..128 characters of a conservative alphabet, so a
// client cannot inject log lines or odd bytes through the header.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		ok := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
			b == '-' || b == '_' || b == '.' || b == ':'
		if !ok {
			return false
		}
	}
	return true
}

// requestLog returns the logger for this request, tagged with its id.
func (s *Server) requestLog(c *gin.Context) *zap.Logger {
	return s.log.With(zap.String("request_id", c.GetString(keyRequestID)))
}

// accessLog writes one structured line per request once it is answered.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched" // keeps the label set bounded: never a raw path
	}
	method := telemetry.Method(c.Request.Method)
	telemetry.HTTPRequests.WithLabelValues(route, method, telemetry.Status(c.Writer.Status())).Inc()
	telemetry.HTTPDuration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
	fields := []zap.Field{
		zap.String("request_id", c.GetString(keyRequestID)),
		zap.String("method", c.Request.Method),
		zap.String("route", c.FullPath()),
		zap.String("path", c.Request.URL.Path),
		zap.Int("status", c.Writer.Status()),
		zap.Duration("latency", time.Since(start)),
		zap.Int("bytes", c.Writer.Size()),
		zap.String("client_ip", c.ClientIP()),
	}
	if a := accountOf(c); a != nil {
		fields = append(fields, zap.String("account", a.Entity), zap.String("account_id", a.ID))
	}
	s.log.Info("request", fields...)
}

// recoverPanic turns a panic in a handler into a logged 500 with a generic
// message. There should never be one: bad input is a 4xx everywhere.
func (s *Server) recoverPanic(c *gin.Context) {
	defer func() {
		rec := recover()
		if rec == nil {
			return
		}
		if rec == http.ErrAbortHandler {
			panic(rec) // the server's own way to drop a connection
		}
		s.requestLog(c).Error("panic in handler", zap.Any("panic", rec), zap.Stack("stack"))
		if !c.Writer.Written() {
			s.writeDetail(c, http.StatusInternalServerError, internalMessage)
		}
		c.Abort()
	}()
	c.Next()
}
