SELECT stage, name, status, counts, duration_s, message
FROM ops.nightly_stages
WHERE run_id = ?
ORDER BY CASE stage WHEN 'source' THEN 1 WHEN 'source health' THEN 2 WHEN 'builder' THEN 3 ELSE 4 END, name;
