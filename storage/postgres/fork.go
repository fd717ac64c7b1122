package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard"
)

// CreateForkedModel inserts m, forked from checkpoint source (of a model of
// the same account), together with its step 0 checkpoint carrying the
// source's metrics, in one transaction: a fork is never left without its
// starting state. m.ID may be set (the caller copied the checkpoint's
// objects under it first). ENOTFOUND when the source is not the account's
// or was deleted meanwhile (a concurrent prune holds the source's row lock
// until it commits, and the foreign key then fails); ECONFLICT when the
// name is taken.
func (db *DB) CreateForkedModel(ctx context.Context, m *trainyard.Model, source *trainyard.Checkpoint) (*trainyard.Checkpoint, error) {
	acct, err := parseID("account", m.AccountID)
	if err != nil {
		return nil, err
	}
	id, err := idOrNew("model", m.ID)
	if err != nil {
		return nil, err
	}
	src, err := parseID("checkpoint", source.ID)
	if err != nil {
		return nil, err
	}
	cid, err := newID()
	if err != nil {
		return nil, err
	}
	policy, err := encodePolicy(m.CheckpointPolicy)
	if err != nil {
		return nil, err
	}
	var ckpt *trainyard.Checkpoint
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO models (id, account_id, entity, project, name, base_model, forked_from, checkpoint_policy)
			SELECT $1, $2, $3, $4, $5, $6, c.id, $8 FROM checkpoints c JOIN models s ON s.id = c.model_id
			WHERE c.id = $7 AND s.account_id = $2
			RETURNING created_at`,
			id, acct, m.Entity, m.Project, m.Name, m.BaseModel, src, policy).Scan(&m.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return trainyard.Errorf(trainyard.ENOTFOUND, "checkpoint %s not found", src)
		}
		if err != nil {
			return translate(err, "model %s/%s/%s", m.Entity, m.Project, m.Name)
		}
		ckpt, err = scanCheckpoint(tx.QueryRow(ctx, `
			INSERT INTO checkpoints (id, model_id, step, metrics)
			SELECT $1, $2, 0, metrics FROM checkpoints WHERE id = $3
			RETURNING `+checkpointColumns, cid, id, src))
		return translate(err, "checkpoint 0 of model %s", id)
	})
	if err != nil {
		return nil, err
	}
	m.ID, m.AccountID, m.ForkedFrom = id, acct, src
	return ckpt, nil
}
