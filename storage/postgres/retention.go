package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trainyard/trainyard"
)

// encodePolicy is the jsonb value of a checkpoint policy (NULL for none);
// an invalid policy is EINVALID.
func encodePolicy(p *trainyard.CheckpointPolicy) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, trainyard.WrapError(trainyard.EINVALID, err, "checkpoint policy is not JSON-encodable")
	}
	return b, nil
}

// SetCheckpointPolicy replaces the account's model's checkpoint policy (nil
// removes it) and returns the model as stored.
func (db *DB) SetCheckpointPolicy(ctx context.Context, accountID, modelID string, p *trainyard.CheckpointPolicy) (*trainyard.Model, error) {
	acct, mid, err := parseOwned(accountID, "model", modelID)
	if err != nil {
		return nil, err
	}
	policy, err := encodePolicy(p)
	if err != nil {
		return nil, err
	}
	m, err := scanModel(db.pool.QueryRow(ctx, `UPDATE models SET checkpoint_policy = $3
		WHERE id = $1 AND account_id = $2 RETURNING `+modelColumns, mid, acct, policy))
	if err != nil {
		return nil, translate(err, "model %s", modelID)
	}
	return m, nil
}

// MarkCheckpointServed records that a chat completion uses the checkpoint
// at time at (never moving the mark back). A checkpoint deleted meanwhile
// is not an error: there is nothing left to keep.
func (db *DB) MarkCheckpointServed(ctx context.Context, checkpointID string, at time.Time) error {
	cid, err := parseID("checkpoint", checkpointID)
	if err != nil {
		return err
	}
	_, err = db.pool.Exec(ctx, `UPDATE checkpoints SET last_served_at = GREATEST(last_served_at, $2) WHERE id = $1`, cid, at)
	return translate(err, "checkpoint %s", checkpointID)
}

// PruneCheckpoints locks every checkpoint of the model (FOR UPDATE: a log
// merging metrics, a fork naming one as its source or another prune waits),
// reads them with whether another model was forked from each and when each
// was last served, deletes the steps choose returns except the newest, and
// returns the deleted rows ordered by step.
func (db *DB) PruneCheckpoints(ctx context.Context, modelID string, choose trainyard.PruneChoice) ([]*trainyard.Checkpoint, error) {
	mid, err := parseID("model", modelID)
	if err != nil {
		return nil, err
	}
	var deleted []*trainyard.Checkpoint
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+checkpointColumns+`, last_served_at,
				EXISTS (SELECT 1 FROM models f WHERE f.forked_from = checkpoints.id)
			FROM checkpoints WHERE model_id = $1 ORDER BY step FOR UPDATE`, mid)
		if err != nil {
			return translate(err, "checkpoints of model %s", modelID)
		}
		all, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (trainyard.CheckpointUsage, error) {
			c := &trainyard.Checkpoint{}
			var served pgtype.Timestamptz
			u := trainyard.CheckpointUsage{Checkpoint: c}
			err := row.Scan(&c.ID, &c.ModelID, &c.Step, &c.JobID, &c.Metrics, &c.CreatedAt, &served, &u.ForkSource)
			if served.Valid {
				u.LastServed = served.Time
			}
			return u, err
		})
		if err != nil {
			return translate(err, "checkpoints of model %s", modelID)
		}
		if len(all) == 0 {
			return nil
		}
		newest := all[len(all)-1].Checkpoint.Step
		var steps []int32
		for _, s := range choose(all) {
			if s != newest && validStep(s) {
				steps = append(steps, int32(s))
			}
		}
		if len(steps) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, `DELETE FROM checkpoints WHERE model_id = $1 AND step = ANY($2) RETURNING `+checkpointColumns, mid, steps)
		if err != nil {
			return translate(err, "checkpoints of model %s", modelID)
		}
		deleted, err = pgx.CollectRows(rows, scanCheckpointRow)
		return translate(err, "checkpoints of model %s", modelID)
	})
	if err != nil {
		return nil, err
	}
	sortByStep(deleted)
	return deleted, nil
}
