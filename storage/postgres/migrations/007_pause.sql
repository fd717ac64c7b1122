-- Pause and resume: a job may be PAUSED between two steps (it keeps its turn
-- on its model), and a pause that waits for the step in progress is flagged
-- for the Train activity, which reads the flag between steps.
ALTER TABLE jobs DROP CONSTRAINT jobs_status_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_check
    CHECK (status IN ('QUEUED', 'RUNNING', 'PAUSED', 'COMPLETED', 'FAILED', 'CANCELLED'));
ALTER TABLE jobs ADD COLUMN pause_requested boolean NOT NULL DEFAULT false;
