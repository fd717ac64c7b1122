package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard"
)

// modelSummarySelect reads models (m) with their newest checkpoint (c): the
// lateral subquery walks the (model_id, step) index backwards and stops at
// the first row, so a page costs one index probe per model however many
// checkpoints each has.
const modelSummarySelect = `SELECT m.id, m.account_id, m.entity, m.project, m.name, m.base_model, m.run_id, m.created_at,
		c.id, c.step, c.job_id, c.metrics, c.created_at
	FROM models m LEFT JOIN LATERAL (
		SELECT id, step, job_id, metrics, created_at FROM checkpoints
		WHERE model_id = m.id ORDER BY step DESC LIMIT 1) c ON true`

func scanModelSummary(row pgx.CollectableRow) (*trainyard.ModelSummary, error) {
	s := &trainyard.ModelSummary{}
	m := &s.Model
	var (
		cpID    *string
		cpStep  *int
		cpAt    *time.Time
		cp      trainyard.Checkpoint
		metrics map[string]float64
	)
	err := row.Scan(&m.ID, &m.AccountID, &m.Entity, &m.Project, &m.Name, &m.BaseModel, &m.RunID, &m.CreatedAt,
		&cpID, &cpStep, &cp.JobID, &metrics, &cpAt)
	if err != nil {
		return nil, err
	}
	if cpID != nil {
		cp.ID, cp.ModelID, cp.Step, cp.Metrics, cp.CreatedAt = *cpID, m.ID, *cpStep, metrics, *cpAt
		s.Latest = &cp
	}
	return s, nil
}

// FindModelSummary returns the account's model by id with its newest
// checkpoint (Latest nil when it has none); another account's model is
// ENOTFOUND.
func (db *DB) FindModelSummary(ctx context.Context, accountID, modelID string) (*trainyard.ModelSummary, error) {
	acct, mid, err := parseOwned(accountID, "model", modelID)
	if err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, modelSummarySelect+` WHERE m.id = $1 AND m.account_id = $2`, mid, acct)
	if err != nil {
		return nil, translate(err, "model %s", modelID)
	}
	s, err := pgx.CollectExactlyOneRow(rows, scanModelSummary)
	if err != nil {
		return nil, translate(err, "model %s", modelID)
	}
	return s, nil
}

// ListModels pages through the account's models by id (creation order),
// newest first unless opts.Order is asc, each with its newest checkpoint.
// opts.After is a model id (exclusive); since ids order the list, the
// cursor model need not still exist.
func (db *DB) ListModels(ctx context.Context, accountID string, opts trainyard.ListOptions) (*trainyard.Page[*trainyard.ModelSummary], error) {
	acct, err := parseID("account", accountID)
	if err != nil {
		return page([]*trainyard.ModelSummary{}, 1), nil
	}
	p, err := pageOf(opts, true)
	if err != nil {
		return nil, err
	}
	after, err := optionalCursor(opts.After)
	if err != nil {
		return nil, err
	}
	cmp, dir := p.keyset()
	return queryPage(ctx, db, p, scanModelSummary, "models", modelSummarySelect+`
		WHERE m.account_id = $1 AND ($2::uuid IS NULL OR m.id `+cmp+` $2)
		ORDER BY m.id `+dir+` LIMIT $3`, acct, after)
}
