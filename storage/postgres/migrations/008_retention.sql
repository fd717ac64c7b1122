-- Retention: a model may carry a checkpoint policy (keep_last, keep_best_by),
-- applied after every job. Chat completions mark the checkpoints they use, so
-- retention keeps a checkpoint being served; a fork's source is found by the
-- index on forked_from.
ALTER TABLE models ADD COLUMN checkpoint_policy jsonb;
ALTER TABLE checkpoints ADD COLUMN last_served_at timestamptz;
CREATE INDEX models_forked_from_idx ON models (forked_from) WHERE forked_from IS NOT NULL;
