package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/storage/postgres"
)

// TestTransactionsHaveTheDeadline: a statement inside a transaction that
// the database does not answer (here it waits for a row lock another
// session holds, as it would on a frozen server) ends at the operation's
// deadline with EUNAVAILABLE, like a statement outside one. The
// transaction's statements used to run on the caller's context, bounded
// only by BEGIN's and COMMIT's deadline, so a worker's step, or an API
// request, hung on them.
func TestTransactionsHaveTheDeadline(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ctx := context.Background()
	db, err := postgres.OpenWith(ctx, url, postgres.Options{OpTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	acct := newAccount(t, db)
	model := newModel(t, db, acct)
	job := newJob(t, db, model)

	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM models WHERE id = $1 FOR UPDATE`, model.ID); err != nil {
		t.Fatal(err)
	}

	for name, op := range map[string]func(context.Context) error{
		"AppendEvent": func(ctx context.Context) error {
			_, err := db.AppendEvent(ctx, &trainyard.Event{JobID: job.ID, Seq: 1, Type: trainyard.EventTrainingStarted})
			return err
		},
		"DeleteModel": func(ctx context.Context) error {
			_, err := db.DeleteModel(ctx, acct.ID, model.ID)
			return err
		},
	} {
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- op(ctx) }()
		select {
		case err := <-done:
			if trainyard.ErrorCode(err) != trainyard.EUNAVAILABLE {
				t.Errorf("%s on a locked row: %v, want EUNAVAILABLE", name, err)
			}
			t.Logf("%s: %v after %v", name, trainyard.ErrorMessage(err), time.Since(start).Round(time.Millisecond))
		case <-time.After(5 * time.Second):
			t.Errorf("%s on a locked row: no answer after 5 s (deadline 300 ms)", name)
		}
	}
}
