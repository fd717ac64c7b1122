package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard"
)

const eventColumns = `id, job_id, seq, type, data, created_at`

func scanEvent(row pgx.Row) (*trainyard.Event, error) {
	e := &trainyard.Event{}
	err := row.Scan(&e.ID, &e.JobID, &e.Seq, &e.Type, &e.Data, &e.CreatedAt)
	return e, err
}

func scanEventRow(row pgx.CollectableRow) (*trainyard.Event, error) { return scanEvent(row) }

// eventRow returns e's id (a new one unless set) and its data as JSON ({}
// for none).
func eventRow(e *trainyard.Event) (string, []byte, error) {
	id, err := idOrNew("event", e.ID)
	if err != nil {
		return "", nil, err
	}
	if e.Data == nil {
		return id, []byte("{}"), nil
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return "", nil, trainyard.WrapError(trainyard.EINVALID, err, "event data of job %s is not JSON-encodable", e.JobID)
	}
	return id, data, nil
}

// AppendEvent writes e (filling ID unless set, and CreatedAt) and returns
// the stored event. Writing the same (job, seq) again is a no-op that returns
// the event stored first, whatever id or data the retry carries, so retried
// activities never duplicate events. Once a job has its terminal event
// (training_ended or training_failed), any new event is ECONFLICT, and so is
// a terminal event whose seq is not above every other: the terminal event
// stays last even when a straggling activity of a cancelled or terminated
// workflow still reports a step. A missing job is ENOTFOUND.
func (db *DB) AppendEvent(ctx context.Context, e *trainyard.Event) (*trainyard.Event, error) {
	jid, err := parseID("job", e.JobID)
	if err != nil {
		return nil, err
	}
	if e.Seq < 1 {
		return nil, trainyard.Errorf(trainyard.EINVALID, "event sequence number must be at least 1, got %d", e.Seq)
	}
	if e.Type == "" {
		return nil, trainyard.Errorf(trainyard.EINVALID, "event type must not be empty")
	}
	id, data, err := eventRow(e)
	if err != nil {
		return nil, err
	}
	var stored *trainyard.Event
	refused := false
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// Appends to one job are serialised on its row, so the terminal
		// check below sees every event committed before this one.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, jid); err != nil {
			return err
		}
		var err error
		stored, err = scanEvent(tx.QueryRow(ctx, `
			INSERT INTO events (id, job_id, seq, type, data)
			SELECT $1, $2, $3, $4, $5
			WHERE NOT EXISTS (SELECT 1 FROM events WHERE job_id = $2 AND type IN `+terminalEventTypes+`)
			  AND ($4 NOT IN `+terminalEventTypes+`
			       OR NOT EXISTS (SELECT 1 FROM events WHERE job_id = $2 AND seq > $3))
			ON CONFLICT (job_id, seq) DO NOTHING
			RETURNING `+eventColumns,
			id, jid, e.Seq, e.Type, data))
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// Either the sequence number is taken (a retry: return the first
		// write) or the event is refused.
		stored, err = scanEvent(tx.QueryRow(ctx,
			`SELECT `+eventColumns+` FROM events WHERE job_id = $1 AND seq = $2`, jid, e.Seq))
		if errors.Is(err, pgx.ErrNoRows) {
			refused = true
			return nil
		}
		return err
	})
	switch {
	case refused, violates(err, "events_terminal_idx"):
		return nil, trainyard.WrapError(trainyard.ECONFLICT, err,
			"job %s already has a terminal event, or a later event than this terminal one", e.JobID)
	case err != nil:
		return nil, translate(err, "event %d of job %s", e.Seq, e.JobID)
	}
	return stored, nil
}

// EndJob appends the job's terminal event e after its last event (e.Seq is
// ignored and chosen here) and applies u to the job in the same transaction,
// so whoever reads a training_ended or training_failed event finds the job's
// terminal status too, and the other way round. A job that already has a
// terminal event keeps it and it is returned; u is applied again only when
// that event is of e's type (a retried call), so a job closed one way is
// never given the other way's status. A missing job is ENOTFOUND.
func (db *DB) EndJob(ctx context.Context, e *trainyard.Event, u trainyard.JobUpdate) (*trainyard.Event, error) {
	jid, err := parseID("job", e.JobID)
	if err != nil {
		return nil, err
	}
	if e.Type != trainyard.EventTrainingEnded && e.Type != trainyard.EventTrainingFailed {
		return nil, trainyard.Errorf(trainyard.EINVALID, "event type %q does not end a job", e.Type)
	}
	id, data, err := eventRow(e)
	if err != nil {
		return nil, err
	}
	var stored *trainyard.Event
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// The row lock orders this against every other append to the job
		// (AppendEvent takes it too), so the sequence number read below is
		// still the last one when the event is written.
		tag, err := tx.Exec(ctx, `SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, jid)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return trainyard.Errorf(trainyard.ENOTFOUND, "job %s not found", e.JobID)
		}
		stored, err = scanEvent(tx.QueryRow(ctx, `SELECT `+eventColumns+` FROM events
			WHERE job_id = $1 AND type IN `+terminalEventTypes, jid))
		switch {
		case err == nil && stored.Type != e.Type:
			return nil
		case err == nil:
			return updateJob(ctx, tx, e.JobID, u)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		stored, err = scanEvent(tx.QueryRow(ctx, `
			INSERT INTO events (id, job_id, seq, type, data)
			SELECT $1, $2, COALESCE(max(seq), 0) + 1, $3, $4 FROM events WHERE job_id = $2
			RETURNING `+eventColumns,
			id, jid, e.Type, data))
		if err != nil {
			return err
		}
		return updateJob(ctx, tx, e.JobID, u)
	})
	if err != nil {
		return nil, translate(err, "terminal event of job %s", e.JobID)
	}
	return stored, nil
}

// ListEvents pages through a job's events by Seq, oldest first unless
// opts.Order is desc. opts.After is an event id of this job (exclusive); any
// other id is EINVALID.
func (db *DB) ListEvents(ctx context.Context, jobID string, opts trainyard.ListOptions) (*trainyard.Page[*trainyard.Event], error) {
	jid, err := parseID("job", jobID)
	if err != nil {
		return nil, err
	}
	p, err := pageOf(opts, false)
	if err != nil {
		return nil, err
	}
	after, err := cursorKey(ctx, db, `SELECT seq FROM events WHERE id = $1 AND job_id = $2`, opts.After, jid, "event of this job")
	if err != nil {
		return nil, err
	}
	cmp, dir := p.keyset()
	return queryPage(ctx, db, p, scanEventRow, "events of job "+jobID, `SELECT `+eventColumns+` FROM events
		WHERE job_id = $1 AND ($2::integer IS NULL OR seq `+cmp+` $2) ORDER BY seq `+dir+` LIMIT $3`, jid, after)
}

// LastEvent returns the job's event with the highest Seq, or ENOTFOUND when
// it has none.
func (db *DB) LastEvent(ctx context.Context, jobID string) (*trainyard.Event, error) {
	jid, err := parseID("job", jobID)
	if err != nil {
		return nil, err
	}
	e, err := scanEvent(db.pool.QueryRow(ctx,
		`SELECT `+eventColumns+` FROM events WHERE job_id = $1 ORDER BY seq DESC LIMIT 1`, jid))
	if err != nil {
		return nil, translate(err, "event of job %s", jobID)
	}
	return e, nil
}

// CountEvents returns how many events of type typ the job has (0 for a job
// without any, or no such job).
func (db *DB) CountEvents(ctx context.Context, jobID string, typ trainyard.EventType) (int, error) {
	jid, err := parseID("job", jobID)
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE job_id = $1 AND type = $2`, jid, typ).Scan(&n); err != nil {
		return 0, translate(err, "events of job %s", jobID)
	}
	return n, nil
}
