-- The digest of a job's request in canonical form, so that an
-- Idempotency-Key reused with a different body is told apart from a retry
-- of the same request (409 instead of the old job). Jobs created before
-- this column have none and are compared by model and kind only.
ALTER TABLE jobs ADD COLUMN request_hash text;
