package postgres

import (
	"context"
	"errors"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard"
)

const checkpointColumns = `id, model_id, step, job_id, metrics, created_at`

func scanCheckpoint(row pgx.Row) (*trainyard.Checkpoint, error) {
	c := &trainyard.Checkpoint{}
	err := row.Scan(&c.ID, &c.ModelID, &c.Step, &c.JobID, &c.Metrics, &c.CreatedAt)
	return c, err
}

func scanCheckpointRow(row pgx.CollectableRow) (*trainyard.Checkpoint, error) {
	return scanCheckpoint(row)
}

// validStep reports whether a step can name a checkpoint (the column is a
// 32-bit integer; step 0 exists only in forks).
func validStep(step int) bool { return step >= 0 && step <= math.MaxInt32 }

func checkpointNotFound(step int, modelID string) error {
	return trainyard.Errorf(trainyard.ENOTFOUND, "checkpoint at step %d of model %s not found", step, modelID)
}

func sortByStep(cs []*trainyard.Checkpoint) {
	slices.SortFunc(cs, func(a, b *trainyard.Checkpoint) int { return a.Step - b.Step })
}

// CreateCheckpoint records the checkpoint of a training step, filling ID and
// CreatedAt. It is idempotent on (model, step): when the step exists, c is
// overwritten with the stored row (its id, job, metrics and time) and no
// error is returned. Training writes steps from 1: step 0 is a fork's
// starting state, written only by CreateForkedModel with its model.
func (db *DB) CreateCheckpoint(ctx context.Context, c *trainyard.Checkpoint) error {
	mid, err := parseID("model", c.ModelID)
	if err != nil {
		return err
	}
	if c.Step < 1 || !validStep(c.Step) {
		return trainyard.Errorf(trainyard.EINVALID, "checkpoint step must be between 1 and %d, got %d", math.MaxInt32, c.Step)
	}
	var jobID *string
	if c.JobID != nil {
		j, err := parseID("job", *c.JobID)
		if err != nil {
			return err
		}
		jobID = &j
	}
	id, err := idOrNew("checkpoint", c.ID)
	if err != nil {
		return err
	}
	metrics, err := encodeMetrics(c.Metrics)
	if err != nil {
		return err
	}
	stored, err := scanCheckpoint(db.pool.QueryRow(ctx, `
		INSERT INTO checkpoints (id, model_id, step, job_id, metrics)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (model_id, step) DO NOTHING
		RETURNING `+checkpointColumns,
		id, mid, c.Step, jobID, metrics))
	if errors.Is(err, pgx.ErrNoRows) {
		// The step exists: the conflict waited for its writer to commit,
		// so this read sees it (unless it was deleted just now).
		stored, err = db.FindCheckpoint(ctx, mid, c.Step)
		if err != nil {
			return err
		}
	} else if err != nil {
		return translate(err, "checkpoint at step %d of model %s", c.Step, c.ModelID)
	}
	*c = *stored
	return nil
}

// FindCheckpoint returns the checkpoint of modelID at step.
func (db *DB) FindCheckpoint(ctx context.Context, modelID string, step int) (*trainyard.Checkpoint, error) {
	mid, err := parseID("model", modelID)
	if err != nil {
		return nil, err
	}
	if !validStep(step) {
		return nil, checkpointNotFound(step, modelID)
	}
	c, err := scanCheckpoint(db.pool.QueryRow(ctx,
		`SELECT `+checkpointColumns+` FROM checkpoints WHERE model_id = $1 AND step = $2`, mid, step))
	if err != nil {
		return nil, translate(err, "checkpoint at step %d of model %s", step, modelID)
	}
	return c, nil
}

// LatestCheckpoint returns the checkpoint with the highest step, or
// ENOTFOUND when the model has none.
func (db *DB) LatestCheckpoint(ctx context.Context, modelID string) (*trainyard.Checkpoint, error) {
	mid, err := parseID("model", modelID)
	if err != nil {
		return nil, err
	}
	c, err := scanCheckpoint(db.pool.QueryRow(ctx,
		`SELECT `+checkpointColumns+` FROM checkpoints WHERE model_id = $1 ORDER BY step DESC LIMIT 1`, mid))
	if err != nil {
		return nil, translate(err, "checkpoint of model %s", modelID)
	}
	return c, nil
}

// ListCheckpoints pages through a model's checkpoints by step, ascending
// unless opts.Order is desc. opts.After is the id of a checkpoint of this
// model (exclusive); any other id is EINVALID.
func (db *DB) ListCheckpoints(ctx context.Context, modelID string, opts trainyard.ListOptions) (*trainyard.Page[*trainyard.Checkpoint], error) {
	mid, err := parseID("model", modelID)
	if err != nil {
		return nil, err
	}
	p, err := pageOf(opts, false)
	if err != nil {
		return nil, err
	}
	// The cursor is resolved to its step, which is the sort key.
	after, err := cursorKey(ctx, db, `SELECT step FROM checkpoints WHERE id = $1 AND model_id = $2`, opts.After, mid, "checkpoint of this model")
	if err != nil {
		return nil, err
	}
	cmp, dir := p.keyset()
	return queryPage(ctx, db, p, scanCheckpointRow, "checkpoints of model "+modelID, `SELECT `+checkpointColumns+` FROM checkpoints
		WHERE model_id = $1 AND ($2::integer IS NULL OR step `+cmp+` $2) ORDER BY step `+dir+` LIMIT $3`, mid, after)
}

// DeleteCheckpoints removes the given steps of a model and reports the
// checkpoints deleted (by step) and the requested steps that did not exist
// (in request order, without duplicates).
func (db *DB) DeleteCheckpoints(ctx context.Context, modelID string, steps []int) ([]*trainyard.Checkpoint, []int, error) {
	mid, err := parseID("model", modelID)
	if err != nil {
		return nil, nil, err
	}
	// Steps no column can hold are simply not found (and would not encode).
	valid := make([]int32, 0, len(steps))
	for _, s := range steps {
		if validStep(s) {
			valid = append(valid, int32(s))
		}
	}
	rows, err := db.pool.Query(ctx,
		`DELETE FROM checkpoints WHERE model_id = $1 AND step = ANY($2) RETURNING `+checkpointColumns, mid, valid)
	if err != nil {
		return nil, nil, translate(err, "checkpoints of model %s", modelID)
	}
	deleted, err := pgx.CollectRows(rows, scanCheckpointRow)
	if err != nil {
		return nil, nil, translate(err, "checkpoints of model %s", modelID)
	}
	sortByStep(deleted)
	found := make(map[int]bool, len(deleted))
	for _, c := range deleted {
		found[c.Step] = true
	}
	notFound := []int{}
	for _, s := range steps {
		if !found[s] {
			notFound = append(notFound, s)
			found[s] = true // report each missing step once
		}
	}
	if deleted == nil {
		deleted = []*trainyard.Checkpoint{}
	}
	return deleted, notFound, nil
}

// MergeCheckpointMetrics adds metrics to the checkpoint at step (jsonb ||:
// new keys win, other existing keys stay). ENOTFOUND when absent.
func (db *DB) MergeCheckpointMetrics(ctx context.Context, modelID string, step int, metrics map[string]float64) error {
	mid, err := parseID("model", modelID)
	if err != nil {
		return err
	}
	if !validStep(step) {
		return checkpointNotFound(step, modelID)
	}
	enc, err := encodeMetrics(metrics)
	if err != nil {
		return err
	}
	tag, err := db.pool.Exec(ctx,
		`UPDATE checkpoints SET metrics = metrics || $3::jsonb WHERE model_id = $1 AND step = $2`, mid, step, enc)
	if err != nil {
		return translate(err, "checkpoint at step %d of model %s", step, modelID)
	}
	if tag.RowsAffected() == 0 {
		return checkpointNotFound(step, modelID)
	}
	return nil
}
