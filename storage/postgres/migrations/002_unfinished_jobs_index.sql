-- The job queue questions (the oldest unfinished job of a model; every
-- unfinished job, for the worker's start-up reconciler) look at the few
-- jobs that are not yet terminal. The predicate is written exactly as the
-- queries write it, so the planner can use this partial index for them.
CREATE INDEX jobs_unfinished_idx ON jobs (model_id, id)
    WHERE status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED');
