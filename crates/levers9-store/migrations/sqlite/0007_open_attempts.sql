-- The open attempt of each task, for closing it: every batch of task
-- starts and ends closes attempts by task id, and without this index a
-- large batch is planned as a scan of every attempt ever made.
CREATE INDEX task_attempts_open ON task_attempts (task_id) WHERE ended_at IS NULL;
