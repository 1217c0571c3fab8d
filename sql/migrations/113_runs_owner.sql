-- The process that owns a run (pid, host, and its start on this boot), so a `running` run whose
-- process is gone can be told apart from one still working and marked `interrupted`.
ALTER TABLE ops.runs ADD COLUMN IF NOT EXISTS pid INTEGER;
ALTER TABLE ops.runs ADD COLUMN IF NOT EXISTS host VARCHAR;
ALTER TABLE ops.runs ADD COLUMN IF NOT EXISTS process_start VARCHAR;   -- '<boot id>/<start tick>' on Linux
