package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/storage/postgres"
)

var seq atomic.Int64

// unique returns a name no other fixture in this process uses.
func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

// fixture is a migrated schema with one account and one model in it.
type fixture struct {
	db    *postgres.DB
	acct  *trainyard.Account
	model *trainyard.Model
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	db := pgtest.New(t)
	acct := newAccount(t, db)
	return &fixture{db: db, acct: acct, model: newModel(t, db, acct)}
}

func newAccount(t testing.TB, db *postgres.DB) *trainyard.Account {
	t.Helper()
	a, err := db.CreateAccount(context.Background(), unique("team"))
	if err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	return a
}

func newModel(t testing.TB, db *postgres.DB, a *trainyard.Account) *trainyard.Model {
	t.Helper()
	m := &trainyard.Model{AccountID: a.ID, Entity: a.Entity, Project: "proj", Name: unique("model"), BaseModel: "base"}
	if err := db.CreateModel(context.Background(), m); err != nil {
		t.Fatalf("CreateModel: %v", err)
	}
	return m
}

func newJob(t testing.TB, db *postgres.DB, m *trainyard.Model) *trainyard.Job {
	t.Helper()
	j, created, err := db.CreateJob(context.Background(), &trainyard.Job{AccountID: m.AccountID, ModelID: m.ID, Kind: trainyard.JobKindRL})
	if err != nil || !created {
		t.Fatalf("CreateJob: created=%v err=%v", created, err)
	}
	return j
}

func newCheckpoints(t testing.TB, db *postgres.DB, modelID string, steps ...int) []*trainyard.Checkpoint {
	t.Helper()
	var out []*trainyard.Checkpoint
	for _, s := range steps {
		c := &trainyard.Checkpoint{ModelID: modelID, Step: s, Metrics: map[string]float64{"loss": float64(s)}}
		if err := db.CreateCheckpoint(context.Background(), c); err != nil {
			t.Fatalf("CreateCheckpoint(%d): %v", s, err)
		}
		out = append(out, c)
	}
	return out
}

// wantCode fails the test unless err carries the trainyard error code.
func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := trainyard.ErrorCode(err); got != code {
		t.Fatalf("error code = %q, want %q (err: %v)", got, code, err)
	}
}

// wantOneWinner checks the error codes of racing writers of one row: exactly
// one succeeded and every other got ECONFLICT. what names the successes.
func wantOneWinner(t testing.TB, codes []string, what string) {
	t.Helper()
	wins := 0
	for _, c := range codes {
		switch c {
		case "":
			wins++
		case trainyard.ECONFLICT:
		default:
			t.Fatalf("unexpected code %q", c)
		}
	}
	if wins != 1 {
		t.Fatalf("%d %s, want 1", wins, what)
	}
}

func mustNil(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

const fakeID = "01900000-0000-7000-8000-000000000000"

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func errorsIsCanceled(err error) bool { return errors.Is(err, context.Canceled) }
