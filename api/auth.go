package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/trainyard/trainyard"
)

// accountCtxKey keys the authenticated account in the request context.
type accountCtxKey struct{}

// AccountFromContext returns the account that authenticated the request
// whose context ctx is, or nil.
func AccountFromContext(ctx context.Context) *trainyard.Account {
	a, _ := ctx.Value(accountCtxKey{}).(*trainyard.Account)
	return a
}

// accountOf returns the request's authenticated account, or nil.
func accountOf(c *gin.Context) *trainyard.Account {
	if v, ok := c.Get(keyAccount); ok {
		return v.(*trainyard.Account)
	}
	return nil
}

// authenticate requires "Authorization: Bearer <key>" and puts the key's
// account in the request context. Failures are 401 with
// WWW-Authenticate: Bearer and FastAPI's HTTPBearer messages.
func (s *Server) authenticate(c *gin.Context) {
	header := c.GetHeader("Authorization")
	if header == "" {
		s.unauthorized(c, "Not authenticated")
		return
	}
	scheme, key, ok := strings.Cut(header, " ")
	key = strings.TrimSpace(key)
	if !ok || !strings.EqualFold(scheme, "bearer") || key == "" {
		s.unauthorized(c, "Invalid authentication credentials")
		return
	}
	acct, err := s.deps.Accounts.Authenticate(c.Request.Context(), key)
	if err != nil {
		s.writeError(c, err)
		c.Abort()
		return
	}
	c.Set(keyAccount, acct)
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), accountCtxKey{}, acct))
	c.Next()
}

func (s *Server) unauthorized(c *gin.Context, msg string) {
	c.Header("WWW-Authenticate", "Bearer")
	s.writeDetail(c, http.StatusUnauthorized, msg)
}
