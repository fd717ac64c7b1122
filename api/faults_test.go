package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/testutil/faultproxy"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/storage/postgres"
)

// TestDatabaseFaultsAre503 is issue 12's API under faults: a database that
// stops answering held keyed routes for as long as it was frozen (15 s), and
// connections cut by a restarting server answered 500. Every database call
// now has a deadline, and a frozen, cut or refused database is a 503 with
// Retry-After; the API recovers when the database does.
func TestDatabaseFaultsAre503(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.New(t, u.Host)
	direct := u.String()
	u.Host = proxy.Addr()
	q := u.Query()
	q.Set("application_name", "faults-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	u.RawQuery = q.Encode()
	db, err := postgres.OpenWith(context.Background(), u.String(), postgres.Options{OpTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := newEnvOn(t, db)
	model := e.createModel("faults")
	path := "/v1/preview/models/" + model + "/checkpoints"
	mustStatus(t, e.call("GET", path, nil), http.StatusOK)

	unavailable := func(what string) {
		t.Helper()
		start := time.Now()
		res := e.call("GET", path, nil)
		if took := time.Since(start); res.Status != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || took > 3*time.Second {
			t.Fatalf("%s: %d %s after %v, want a prompt 503 with Retry-After", what, res.Status, res.Body, took)
		}
		t.Logf("%s: 503 after %v", what, time.Since(start).Round(time.Millisecond))
	}
	recovered := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			res := e.call("GET", path, nil)
			if res.Status == http.StatusOK {
				return
			}
			if res.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("after %s: %d %s", what, res.Status, res.Body)
			}
		}
	}

	proxy.Freeze()
	unavailable("frozen database")
	proxy.Thaw()
	recovered("the freeze")

	proxy.Cut()
	res := e.call("GET", path, nil)
	if res.Status != http.StatusOK && res.Status != http.StatusServiceUnavailable {
		t.Fatalf("connections cut: %d %s, want 503 (or 200 on a fresh connection)", res.Status, res.Body)
	}
	recovered("the cut")

	// A server that shuts down terminates its sessions (SQLSTATE 57P01).
	admin, err := pgx.Connect(context.Background(), direct)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
		q.Get("application_name")); err != nil {
		t.Fatal(err)
	}
	res = e.call("GET", path, nil)
	if res.Status != http.StatusOK && res.Status != http.StatusServiceUnavailable {
		t.Fatalf("sessions terminated: %d %s, want 503 (or 200 on a fresh connection)", res.Status, res.Body)
	}
	recovered("the terminated sessions")
}
