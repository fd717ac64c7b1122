package postgres

import (
	"context"
	"time"

	"github.com/trainyard/trainyard"
)

var _ trainyard.InferenceRegistry = (*DB)(nil)

// HeartbeatInference upserts p's row and renews its lease until lease from
// the database's now(), filling p.ID (a new UUIDv7 when empty), StartedAt
// and HeartbeatAt. One statement does both the first registration and every
// heartbeat, so a row pruned or lost (a restored database) comes back with
// the next beat.
func (db *DB) HeartbeatInference(ctx context.Context, p *trainyard.InferenceProcess, lease time.Duration) error {
	id, err := idOrNew("inference process", p.ID)
	if err != nil {
		return err
	}
	models := p.BaseModels
	if models == nil {
		models = []string{}
	}
	err = db.pool.QueryRow(ctx, `
		INSERT INTO inference_processes (id, address, base_models, in_flight, capacity, draining, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond')
		ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, base_models = EXCLUDED.base_models,
			in_flight = EXCLUDED.in_flight, capacity = EXCLUDED.capacity, draining = EXCLUDED.draining,
			heartbeat_at = now(), expires_at = EXCLUDED.expires_at
		RETURNING started_at, heartbeat_at`,
		id, p.Address, models, p.InFlight, p.Capacity, p.Draining, lease.Milliseconds()).Scan(&p.StartedAt, &p.HeartbeatAt)
	if err != nil {
		return translate(err, "inference process %s", id)
	}
	p.ID, p.Live = id, true
	return nil
}

// DeregisterInference deletes the process's row; a missing row is no error.
func (db *DB) DeregisterInference(ctx context.Context, id string) error {
	pid, err := parseID("inference process", id)
	if err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `DELETE FROM inference_processes WHERE id = $1`, pid); err != nil {
		return translate(err, "inference process %s", id)
	}
	return nil
}

// ListInference returns every registered process, oldest first, with Live
// computed by the database's clock.
func (db *DB) ListInference(ctx context.Context) ([]*trainyard.InferenceProcess, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, address, base_models, in_flight, capacity, draining, started_at, heartbeat_at, expires_at > now()
		FROM inference_processes ORDER BY id`)
	if err != nil {
		return nil, translate(err, "inference processes")
	}
	defer rows.Close()
	var out []*trainyard.InferenceProcess
	for rows.Next() {
		p := &trainyard.InferenceProcess{}
		if err := rows.Scan(&p.ID, &p.Address, &p.BaseModels, &p.InFlight, &p.Capacity, &p.Draining,
			&p.StartedAt, &p.HeartbeatAt, &p.Live); err != nil {
			return nil, translate(err, "inference processes")
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "inference processes")
	}
	return out, nil
}

// PruneInference deletes the rows whose lease expired more than age ago.
func (db *DB) PruneInference(ctx context.Context, age time.Duration) (int, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM inference_processes WHERE expires_at < now() - $1 * interval '1 millisecond'`,
		age.Milliseconds())
	if err != nil {
		return 0, translate(err, "inference processes")
	}
	return int(tag.RowsAffected()), nil
}
