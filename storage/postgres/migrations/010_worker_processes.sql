-- The worker registry: each `trainyard worker` keeps its row current with a
-- heartbeat (its job task queue and the base models it trains on), so a job
-- whose base model no live worker holds can say so instead of waiting in
-- silence. Liveness works as in inference_processes: expires_at, set by each
-- heartbeat from the database's clock, lies in the future.
CREATE TABLE worker_processes (
    id           uuid PRIMARY KEY,
    task_queue   text NOT NULL,
    base_models  text[] NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);

CREATE INDEX worker_processes_task_queue ON worker_processes (task_queue);
