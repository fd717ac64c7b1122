package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/internal/testutil/faultproxy"
	"github.com/trainyard/trainyard/storage/postgres"
)

// TestDatabaseOutageDelaysTheJob is issue 12's outage, end to end: the
// workers' database stops answering in the middle of a job. The steps that
// need it fail at their deadline and are retried as an outage; meanwhile GET
// of the job (the API still reaches the database) shows the job retrying,
// with a message that names the database but not its address, user or the
// driver's text; once the database answers again, the job carries on and
// completes with one gap-free sequence of events.
func TestDatabaseOutageDelaysTheJob(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Activities: activities.Config{ChunkDuration: 300 * time.Millisecond}})
	u, err := url.Parse(s.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.New(t, u.Host)
	u.Host = proxy.Addr()
	if s.workerDB, err = postgres.OpenWith(context.Background(), u.String(), postgres.Options{OpTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.workerDB.Close)
	s.startWorker()
	model := s.createModel("outage")
	id := s.longSFT(model, 10, 4) // 40 steps
	s.waitEvents(id, 5, time.Minute)

	proxy.Freeze()
	frozen := time.Now()
	var job map[string]any
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		job = s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil)
		if le, _ := job["last_error"].(map[string]any); le != nil && le["attempt"].(float64) >= 3 {
			break
		}
		if job["status"] != "RUNNING" || time.Now().After(deadline) {
			t.Fatalf("job while its workers' database is frozen: %v", job)
		}
	}
	proxy.Thaw()
	le := job["last_error"].(map[string]any)
	msg := fmt.Sprint(le["message"])
	for _, secret := range []string{u.Hostname(), u.Port(), u.User.Username(), "SQLSTATE", "user=", "database=", "code=", "context deadline"} {
		if secret != "" && strings.Contains(msg, secret) {
			t.Fatalf("last_error %q shows %q", msg, secret)
		}
	}
	if !strings.Contains(msg, "database") {
		t.Fatalf("last_error %q does not say what is wrong", msg)
	}
	t.Logf("frozen database: after %v the job shows %v", time.Since(frozen).Round(100*time.Millisecond), le)

	done := s.waitJob(id, 2*time.Minute)
	if done["status"] != "COMPLETED" || done["error"] != nil {
		t.Fatalf("job after the outage = %v", done)
	}
	checkEvents(t, s.events(id), 40, "training_ended")
}
