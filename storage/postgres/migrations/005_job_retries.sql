-- A retry is a new job on the same stored inputs; it names the job it
-- retries, and a job is retried at most once (its retried_by is the one
-- job whose retry_of names it).
ALTER TABLE jobs ADD COLUMN retry_of uuid REFERENCES jobs (id) ON DELETE SET NULL;
CREATE UNIQUE INDEX jobs_retry_of_idx ON jobs (retry_of) WHERE retry_of IS NOT NULL;
