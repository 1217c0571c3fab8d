-- Close a run with its status, counts and failure summary.
UPDATE ops.runs SET finished_at = ?, status = ?, counts = ?, message = ? WHERE run_id = ?;
