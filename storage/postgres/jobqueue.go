package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard"
)

// This file answers the job queue questions of the workflow layer: which job
// may run next on a model, and which jobs are still open (for the worker's
// start-up reconciler). Ids are UUIDv7, so id order is creation order.

// OldestUnfinishedJob returns the QUEUED or RUNNING job of modelID with the
// smallest id, or ENOTFOUND when the model has none.
func (db *DB) OldestUnfinishedJob(ctx context.Context, modelID string) (*trainyard.Job, error) {
	mid, err := parseID("model", modelID)
	if err != nil {
		return nil, err
	}
	j, err := scanJob(db.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE model_id = $1 AND status NOT IN `+terminalStatuses+` ORDER BY id LIMIT 1`, mid))
	if err != nil {
		return nil, translate(err, "unfinished job of model %s", modelID)
	}
	return j, nil
}

// UnfinishedJobs returns up to limit QUEUED or RUNNING jobs of any account
// created before createdBefore, oldest first.
func (db *DB) UnfinishedJobs(ctx context.Context, createdBefore time.Time, limit int) ([]*trainyard.Job, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE status NOT IN `+terminalStatuses+` AND created_at < $1 ORDER BY id LIMIT $2`, createdBefore, limit)
	if err != nil {
		return nil, translate(err, "unfinished jobs")
	}
	items, err := pgx.CollectRows(rows, scanJobRow)
	if err != nil {
		return nil, translate(err, "unfinished jobs")
	}
	return items, nil
}
