package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trainyard/trainyard"
)

const jobColumns = `id, account_id, model_id, kind, status, idempotency_key, config, workflow_id, run_id,
	current_step, total_steps, checkpoint, latest_metrics, error, created_at, started_at, finished_at, request_hash,
	saved_step, retry_of, (SELECT r.id FROM jobs r WHERE r.retry_of = jobs.id) AS retried_by, pause_requested`

// terminalStatuses is the SQL list of final job statuses.
const terminalStatuses = `('COMPLETED', 'FAILED', 'CANCELLED')`

// terminalEventTypes is the SQL list of the event types that end a job.
const terminalEventTypes = `('training_ended', 'training_failed')`

func scanJob(row pgx.Row) (*trainyard.Job, error) {
	j := &trainyard.Job{}
	var hash pgtype.Text
	var retryOf, retriedBy pgtype.UUID
	err := row.Scan(&j.ID, &j.AccountID, &j.ModelID, &j.Kind, &j.Status, &j.IdempotencyKey, &j.Config,
		&j.WorkflowID, &j.RunID, &j.CurrentStep, &j.TotalSteps, &j.Checkpoint, &j.LatestMetrics, &j.Error,
		&j.CreatedAt, &j.StartedAt, &j.FinishedAt, &hash, &j.SavedStep, &retryOf, &retriedBy, &j.PauseRequested)
	j.RequestHash = hash.String
	if retryOf.Valid {
		j.RetryOf = uuidString(retryOf.Bytes)
	}
	if retriedBy.Valid {
		j.RetriedBy = uuidString(retriedBy.Bytes)
	}
	return j, err
}

func scanJobRow(row pgx.CollectableRow) (*trainyard.Job, error) { return scanJob(row) }

// CreateJob inserts j, filling ID (unless set), CreatedAt and a QUEUED
// status when none is given, and returns the stored job. When the account
// already has a job with the same IdempotencyKey it returns that job and
// created=false instead; concurrent calls with one key create one job.
func (db *DB) CreateJob(ctx context.Context, j *trainyard.Job) (*trainyard.Job, bool, error) {
	acct, mid, err := parseOwned(j.AccountID, "model", j.ModelID)
	if err != nil {
		return nil, false, err
	}
	if j.Kind != trainyard.JobKindRL && j.Kind != trainyard.JobKindSFT {
		return nil, false, trainyard.Errorf(trainyard.EINVALID, "invalid job kind %q", j.Kind)
	}
	status := j.Status
	if status == "" {
		status = trainyard.JobQueued
	}
	if !validStatus(status) {
		return nil, false, trainyard.Errorf(trainyard.EINVALID, "invalid job status %q", status)
	}
	id, err := idOrNew("job", j.ID)
	if err != nil {
		return nil, false, err
	}
	metrics, err := encodeMetrics(j.LatestMetrics)
	if err != nil {
		return nil, false, err
	}
	var config []byte
	if len(j.Config) > 0 {
		config = j.Config
	}
	if j.IdempotencyKey != nil && *j.IdempotencyKey == "" {
		return nil, false, trainyard.Errorf(trainyard.EINVALID, "idempotency key must not be empty")
	}
	// INSERT ... SELECT from the account's model: a model of another
	// account inserts nothing, exactly like a taken idempotency key, and
	// both are told apart below.
	stored, err := scanJob(db.pool.QueryRow(ctx, `
		INSERT INTO jobs (id, account_id, model_id, kind, status, idempotency_key, config, workflow_id, run_id,
			current_step, total_steps, checkpoint, latest_metrics, error, started_at, finished_at, request_hash, retry_of)
		SELECT $1, m.account_id, m.id, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, NULLIF($17, ''),
			(SELECT p.id FROM jobs p WHERE p.id = NULLIF($18, '')::uuid AND p.account_id = m.account_id)
		FROM models m WHERE m.id = $3 AND m.account_id = $2
		ON CONFLICT (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING `+jobColumns,
		id, acct, mid, j.Kind, status, j.IdempotencyKey, config, j.WorkflowID, j.RunID,
		j.CurrentStep, j.TotalSteps, j.Checkpoint, metrics, j.Error, j.StartedAt, j.FinishedAt, j.RequestHash, j.RetryOf))
	if err == nil {
		return stored, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, translate(err, "job")
	}
	if j.IdempotencyKey != nil {
		// ON CONFLICT waited for the other writer of this key to commit,
		// so its job is visible now.
		existing, err := scanJob(db.pool.QueryRow(ctx,
			`SELECT `+jobColumns+` FROM jobs WHERE account_id = $1 AND idempotency_key = $2`, acct, *j.IdempotencyKey))
		if err == nil {
			return existing, false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, false, translate(err, "job with idempotency key %q", *j.IdempotencyKey)
		}
	}
	return nil, false, trainyard.Errorf(trainyard.ENOTFOUND, "model %s not found", j.ModelID)
}

// FindJob returns the account's job by id; another account's job is
// ENOTFOUND.
func (db *DB) FindJob(ctx context.Context, accountID, jobID string) (*trainyard.Job, error) {
	acct, jid, err := parseOwned(accountID, "job", jobID)
	if err != nil {
		return nil, err
	}
	j, err := scanJob(db.pool.QueryRow(ctx,
		`SELECT `+jobColumns+` FROM jobs WHERE id = $1 AND account_id = $2`, jid, acct))
	if err != nil {
		return nil, translate(err, "job %s", jobID)
	}
	return j, nil
}

// GetJob returns a job by id whatever its account (for activities, which get
// ids from trusted workflows).
func (db *DB) GetJob(ctx context.Context, jobID string) (*trainyard.Job, error) {
	jid, err := parseID("job", jobID)
	if err != nil {
		return nil, err
	}
	j, err := scanJob(db.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, jid))
	if err != nil {
		return nil, translate(err, "job %s", jobID)
	}
	return j, nil
}

// ListJobs pages through the account's jobs by id (time order), newest
// first unless opts.Order is asc; modelID filters when non-empty (an id
// that is not a UUID matches nothing). opts.After is a job id (exclusive);
// since ids order the list, the cursor job need not still exist.
func (db *DB) ListJobs(ctx context.Context, accountID, modelID string, opts trainyard.ListOptions) (*trainyard.Page[*trainyard.Job], error) {
	acct, err := parseID("account", accountID)
	if err != nil {
		return page([]*trainyard.Job{}, 1), nil
	}
	p, err := pageOf(opts, true)
	if err != nil {
		return nil, err
	}
	after, err := optionalCursor(opts.After)
	if err != nil {
		return nil, err
	}
	var model *string
	if modelID != "" {
		mid, err := parseID("model", modelID)
		if err != nil {
			return page([]*trainyard.Job{}, 1), nil
		}
		model = &mid
	}
	cmp, dir := p.keyset()
	return queryPage(ctx, db, p, scanJobRow, "jobs", `SELECT `+jobColumns+` FROM jobs
		WHERE account_id = $1 AND ($2::uuid IS NULL OR model_id = $2) AND ($3::uuid IS NULL OR id `+cmp+` $3)
		ORDER BY id `+dir+` LIMIT $4`, acct, model, after)
}

// UpdateJob applies u; nil fields are left alone. Once a job is terminal its
// status, error and finished time are frozen: the first terminal outcome
// wins (a late cancel cannot turn COMPLETED into CANCELLED), while progress
// fields may still be filled in.
func (db *DB) UpdateJob(ctx context.Context, jobID string, u trainyard.JobUpdate) error {
	return updateJob(ctx, db.pool, jobID, u)
}

// execer runs one statement: the pool, or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func updateJob(ctx context.Context, q execer, jobID string, u trainyard.JobUpdate) error {
	jid, err := parseID("job", jobID)
	if err != nil {
		return err
	}
	if u.Status != nil && !validStatus(*u.Status) {
		return trainyard.Errorf(trainyard.EINVALID, "invalid job status %q", *u.Status)
	}
	for _, n := range []*int{u.CurrentStep, u.SavedStep, u.TotalSteps} {
		if n != nil && *n < 0 {
			return trainyard.Errorf(trainyard.EINVALID, "job step counts must not be negative, got %d", *n)
		}
	}
	var metrics []byte
	if u.LatestMetrics != nil {
		if metrics, err = encodeMetrics(u.LatestMetrics); err != nil {
			return err
		}
	}
	tag, err := q.Exec(ctx, `
		UPDATE jobs SET
			status         = CASE WHEN status IN `+terminalStatuses+` THEN status ELSE COALESCE($2, status) END,
			error          = CASE WHEN status IN `+terminalStatuses+` THEN error ELSE COALESCE($3, error) END,
			finished_at    = CASE WHEN status IN `+terminalStatuses+` THEN finished_at ELSE COALESCE($4, finished_at) END,
			run_id         = COALESCE($5, run_id),
			current_step   = GREATEST(current_step, COALESCE($6, current_step)),
			total_steps    = COALESCE($7, total_steps),
			checkpoint     = COALESCE($8, checkpoint),
			latest_metrics = CASE WHEN $6::integer < current_step THEN latest_metrics
			                      ELSE COALESCE($9::jsonb, latest_metrics) END,
			started_at     = COALESCE($10, started_at),
			saved_step     = GREATEST(saved_step, COALESCE($11, saved_step)),
			pause_requested = COALESCE($12, pause_requested)
		WHERE id = $1`,
		jid, u.Status, u.Error, u.FinishedAt, u.RunID, u.CurrentStep, u.TotalSteps, u.Checkpoint, metrics, u.StartedAt, u.SavedStep,
		u.PauseRequested)
	if err != nil {
		return translate(err, "job %s", jobID)
	}
	if tag.RowsAffected() == 0 {
		return trainyard.Errorf(trainyard.ENOTFOUND, "job %s not found", jobID)
	}
	return nil
}

func validStatus(s trainyard.JobStatus) bool {
	switch s {
	case trainyard.JobQueued, trainyard.JobRunning, trainyard.JobPaused, trainyard.JobCompleted, trainyard.JobFailed, trainyard.JobCancelled:
		return true
	}
	return false
}

// uuidString formats a UUID's 16 bytes.
func uuidString(b [16]byte) string { return uuid.UUID(b).String() }
