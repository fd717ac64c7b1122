-- The inference registry: each `trainyard infer` process keeps its row
-- current with a heartbeat (address, base models held, load) and the API
-- routes chat completions to live rows. A row is live while expires_at, set
-- by each heartbeat from the database's clock, is in the future; a process
-- that stops heartbeating drops out by itself, and one that shuts down
-- cleanly deletes its row. Rows long expired are pruned by processes that
-- start.
CREATE TABLE inference_processes (
    id           uuid PRIMARY KEY,
    address      text NOT NULL,
    base_models  text[] NOT NULL,
    in_flight    integer NOT NULL CHECK (in_flight >= 0),
    capacity     integer NOT NULL CHECK (capacity > 0),
    draining     boolean NOT NULL DEFAULT false,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
