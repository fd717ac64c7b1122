-- The number of completed steps whose training state a job last stored.
-- A new run of the job's workflow (a reset from the Temporal UI) resumes
-- from here instead of step 0, so the job never moves backwards.
ALTER TABLE jobs ADD COLUMN saved_step integer NOT NULL DEFAULT 0;
