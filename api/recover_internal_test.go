package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestPanicBecomesLogged500(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	s := New(Config{}, Deps{Logger: zap.New(core)})
	s.engine.GET("/v1/test-panic", func(*gin.Context) { panic("secret detail") })
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/test-panic", nil))
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"detail":"Internal Server Error"}` {
		t.Errorf("response = %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "secret") {
		t.Error("panic value leaked to the client")
	}
	if n := logs.FilterMessage("panic in handler").Len(); n != 1 {
		t.Errorf("panic logged %d times, want 1", n)
	}
	access := logs.FilterMessage("request").All()
	if len(access) != 1 || access[0].ContextMap()["status"] != int64(500) {
		t.Errorf("access log = %v, want one line with status 500", access)
	}
}
