package postgres

import (
	"context"
	"encoding/json"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard"
)

const logColumns = `id, model_id, split, step, metrics, num_groups, num_trajectories, created_at`

func scanLogRow(row pgx.CollectableRow) (*trainyard.LogRecord, error) {
	r := &trainyard.LogRecord{}
	err := row.Scan(&r.ID, &r.ModelID, &r.Split, &r.Step, &r.Metrics, &r.NumGroups, &r.NumTrajectories, &r.CreatedAt)
	return r, err
}

// SaveLog stores rec (filling ID and CreatedAt) and its trajectories in one
// transaction, and merges rec.Metrics into the checkpoint at rec.Step when
// that checkpoint exists. Trajectories go in with COPY, their bodies kept
// byte for byte.
func (db *DB) SaveLog(ctx context.Context, rec *trainyard.LogRecord, trajectories []trainyard.StoredTrajectory) error {
	mid, err := parseID("model", rec.ModelID)
	if err != nil {
		return err
	}
	id, err := idOrNew("log record", rec.ID)
	if err != nil {
		return err
	}
	metrics, err := encodeMetrics(rec.Metrics)
	if err != nil {
		return err
	}
	for i, t := range trajectories {
		if math.IsNaN(t.Reward) || math.IsInf(t.Reward, 0) {
			return trainyard.Errorf(trainyard.EINVALID, "trajectory %d of group %d: reward must be a finite number", t.Index, t.GroupIndex)
		}
		if !json.Valid(t.Body) {
			return trainyard.Errorf(trainyard.EINVALID, "trajectory %d (row %d): body is not valid JSON", t.Index, i)
		}
	}
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO log_records (id, model_id, split, step, metrics, num_groups, num_trajectories)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at`,
			id, mid, rec.Split, rec.Step, metrics, rec.NumGroups, rec.NumTrajectories).Scan(&rec.CreatedAt)
		if err != nil {
			return translate(err, "log record of model %s", rec.ModelID)
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"trajectories"},
			[]string{"log_id", "group_index", "idx", "reward", "body"},
			pgx.CopyFromSlice(len(trajectories), func(i int) ([]any, error) {
				t := trajectories[i]
				return []any{id, t.GroupIndex, t.Index, t.Reward, t.Body}, nil
			}))
		if err != nil {
			return translate(err, "trajectories of log record %s", id)
		}
		if rec.Step > 0 {
			_, err = tx.Exec(ctx,
				`UPDATE checkpoints SET metrics = metrics || $3::jsonb WHERE model_id = $1 AND step = $2`,
				mid, rec.Step, metrics)
			if err != nil {
				return translate(err, "checkpoint at step %d of model %s", rec.Step, rec.ModelID)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rec.ID, rec.ModelID = id, mid
	return nil
}

// ListLogs returns a model's log records, oldest first (by id, which is
// time-ordered). opts.After is a log record id (exclusive); since ids order
// the list, the cursor row need not still exist.
func (db *DB) ListLogs(ctx context.Context, modelID string, opts trainyard.ListOptions) (*trainyard.Page[*trainyard.LogRecord], error) {
	mid, err := parseID("model", modelID)
	if err != nil {
		return nil, err
	}
	p, err := pageOf(opts, false)
	if err != nil {
		return nil, err
	}
	after, err := optionalCursor(opts.After)
	if err != nil {
		return nil, err
	}
	cmp, dir := p.keyset()
	return queryPage(ctx, db, p, scanLogRow, "log records of model "+modelID, `SELECT `+logColumns+` FROM log_records
		WHERE model_id = $1 AND ($2::uuid IS NULL OR id `+cmp+` $2) ORDER BY id `+dir+` LIMIT $3`, mid, after)
}

// ListTrajectories returns the trajectories of one log record, ordered by
// group then index; ENOTFOUND when the record does not exist.
func (db *DB) ListTrajectories(ctx context.Context, logID string) ([]trainyard.StoredTrajectory, error) {
	lid, err := parseID("log record", logID)
	if err != nil {
		return nil, err
	}
	// The LEFT JOIN from the record tells "no such record" (no row) from
	// "a record without trajectories" (one row of NULLs).
	rows, err := db.pool.Query(ctx, `
		SELECT t.group_index, t.idx, t.reward, t.body
		FROM log_records r LEFT JOIN trajectories t ON t.log_id = r.id
		WHERE r.id = $1 ORDER BY t.group_index, t.idx`, lid)
	if err != nil {
		return nil, translate(err, "trajectories of log record %s", logID)
	}
	defer rows.Close()
	out := []trainyard.StoredTrajectory{}
	seen := false
	for rows.Next() {
		seen = true
		var g, i *int
		var reward *float64
		var body []byte
		if err := rows.Scan(&g, &i, &reward, &body); err != nil {
			return nil, translate(err, "trajectories of log record %s", logID)
		}
		if g == nil {
			continue
		}
		out = append(out, trainyard.StoredTrajectory{GroupIndex: *g, Index: *i, Reward: *reward, Body: body})
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "trajectories of log record %s", logID)
	}
	if !seen {
		return nil, trainyard.Errorf(trainyard.ENOTFOUND, "log record %s not found", logID)
	}
	return out, nil
}
