package postgres

import (
	"context"
	"time"

	"github.com/trainyard/trainyard"
)

var _ trainyard.WorkerRegistry = (*DB)(nil)

// HeartbeatWorker upserts w's row and renews its lease until lease from the
// database's now(), filling w.ID (a new UUIDv7 when empty), StartedAt and
// HeartbeatAt. As for inference processes, one statement registers and
// renews, so a row lost meanwhile comes back with the next beat.
func (db *DB) HeartbeatWorker(ctx context.Context, w *trainyard.WorkerProcess, lease time.Duration) error {
	id, err := idOrNew("worker", w.ID)
	if err != nil {
		return err
	}
	models := w.BaseModels
	if models == nil {
		models = []string{}
	}
	err = db.pool.QueryRow(ctx, `
		INSERT INTO worker_processes (id, task_queue, base_models, expires_at)
		VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond')
		ON CONFLICT (id) DO UPDATE SET task_queue = EXCLUDED.task_queue, base_models = EXCLUDED.base_models,
			heartbeat_at = now(), expires_at = EXCLUDED.expires_at
		RETURNING started_at, heartbeat_at`,
		id, w.TaskQueue, models, lease.Milliseconds()).Scan(&w.StartedAt, &w.HeartbeatAt)
	if err != nil {
		return translate(err, "worker %s", id)
	}
	w.ID, w.Live = id, true
	return nil
}

// DeregisterWorker deletes the worker's row; a missing row is no error.
func (db *DB) DeregisterWorker(ctx context.Context, id string) error {
	wid, err := parseID("worker", id)
	if err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `DELETE FROM worker_processes WHERE id = $1`, wid); err != nil {
		return translate(err, "worker %s", id)
	}
	return nil
}

// ListWorkers returns the workers registered on taskQueue, oldest first,
// with Live computed by the database's clock.
func (db *DB) ListWorkers(ctx context.Context, taskQueue string) ([]*trainyard.WorkerProcess, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, task_queue, base_models, started_at, heartbeat_at, expires_at > now()
		FROM worker_processes WHERE task_queue = $1 ORDER BY id`, taskQueue)
	if err != nil {
		return nil, translate(err, "workers")
	}
	defer rows.Close()
	var out []*trainyard.WorkerProcess
	for rows.Next() {
		w := &trainyard.WorkerProcess{}
		if err := rows.Scan(&w.ID, &w.TaskQueue, &w.BaseModels, &w.StartedAt, &w.HeartbeatAt, &w.Live); err != nil {
			return nil, translate(err, "workers")
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "workers")
	}
	return out, nil
}

// PruneWorkers deletes the rows whose lease expired more than age ago.
func (db *DB) PruneWorkers(ctx context.Context, age time.Duration) (int, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM worker_processes WHERE expires_at < now() - $1 * interval '1 millisecond'`,
		age.Milliseconds())
	if err != nil {
		return 0, translate(err, "workers")
	}
	return int(tag.RowsAffected()), nil
}
