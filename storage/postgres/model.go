package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trainyard/trainyard"
)

const modelColumns = `id, account_id, entity, project, name, base_model, run_id, created_at, forked_from, checkpoint_policy`

func scanModel(row pgx.Row) (*trainyard.Model, error) {
	m := &trainyard.Model{}
	var fork pgtype.UUID
	err := row.Scan(&m.ID, &m.AccountID, &m.Entity, &m.Project, &m.Name, &m.BaseModel, &m.RunID, &m.CreatedAt, &fork,
		&m.CheckpointPolicy)
	if fork.Valid {
		m.ForkedFrom = uuidString(fork.Bytes)
	}
	return m, err
}

// CreateModel inserts m with its checkpoint policy, filling ID (unless set)
// and CreatedAt; ECONFLICT when the account already has a model with that
// entity/project/name.
func (db *DB) CreateModel(ctx context.Context, m *trainyard.Model) error {
	acct, err := parseID("account", m.AccountID)
	if err != nil {
		return err
	}
	id, err := idOrNew("model", m.ID)
	if err != nil {
		return err
	}
	policy, err := encodePolicy(m.CheckpointPolicy)
	if err != nil {
		return err
	}
	err = db.pool.QueryRow(ctx, `
		INSERT INTO models (id, account_id, entity, project, name, base_model, run_id, checkpoint_policy)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at`,
		id, acct, m.Entity, m.Project, m.Name, m.BaseModel, m.RunID, policy).Scan(&m.CreatedAt)
	if err != nil {
		return translate(err, "model %s/%s/%s", m.Entity, m.Project, m.Name)
	}
	m.ID, m.AccountID = id, acct
	return nil
}

// FindModel returns the account's model by id; another account's model is
// ENOTFOUND.
func (db *DB) FindModel(ctx context.Context, accountID, modelID string) (*trainyard.Model, error) {
	acct, mid, err := parseOwned(accountID, "model", modelID)
	if err != nil {
		return nil, err
	}
	m, err := scanModel(db.pool.QueryRow(ctx,
		`SELECT `+modelColumns+` FROM models WHERE id = $1 AND account_id = $2`, mid, acct))
	if err != nil {
		return nil, translate(err, "model %s", modelID)
	}
	return m, nil
}

// FindModelByName returns the account's model by entity/project/name.
func (db *DB) FindModelByName(ctx context.Context, accountID, entity, project, name string) (*trainyard.Model, error) {
	acct, err := parseID("account", accountID)
	if err != nil {
		return nil, err
	}
	m, err := scanModel(db.pool.QueryRow(ctx, `
		SELECT `+modelColumns+` FROM models
		WHERE account_id = $1 AND entity = $2 AND project = $3 AND name = $4`,
		acct, entity, project, name))
	if err != nil {
		return nil, translate(err, "model %s/%s/%s", entity, project, name)
	}
	return m, nil
}

// DeleteModel removes the model and, by cascade in the same transaction, its
// checkpoints, log records and trajectories, jobs and their events. It
// returns the checkpoints that were removed, so their objects can go too.
func (db *DB) DeleteModel(ctx context.Context, accountID, modelID string) ([]*trainyard.Checkpoint, error) {
	acct, mid, err := parseOwned(accountID, "model", modelID)
	if err != nil {
		return nil, err
	}
	var deleted []*trainyard.Checkpoint
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// Lock the model first so a concurrent CreateCheckpoint either
		// commits before (and its row is returned here) or fails on the
		// foreign key after.
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM models WHERE id = $1 AND account_id = $2 FOR UPDATE`, mid, acct).Scan(&one)
		if err != nil {
			return translate(err, "model %s", modelID)
		}
		rows, err := tx.Query(ctx, `DELETE FROM checkpoints WHERE model_id = $1 RETURNING `+checkpointColumns, mid)
		if err != nil {
			return translate(err, "checkpoints of model %s", modelID)
		}
		if deleted, err = pgx.CollectRows(rows, scanCheckpointRow); err != nil {
			return translate(err, "checkpoints of model %s", modelID)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM models WHERE id = $1`, mid); err != nil {
			return translate(err, "model %s", modelID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortByStep(deleted)
	return deleted, nil
}

// parseOwned validates an account id and the id of something it owns.
func parseOwned(accountID, kind, id string) (acct, own string, err error) {
	if acct, err = parseID("account", accountID); err != nil {
		return "", "", trainyard.Errorf(trainyard.ENOTFOUND, "%s %q not found", kind, id)
	}
	if own, err = parseID(kind, id); err != nil {
		return "", "", err
	}
	return acct, own, nil
}
