SELECT stage, name, status, counts, duration_s, message
FROM ops.nightly_stages
WHERE run_id = ?
ORDER BY CASE stage WHEN 'source' THEN 1 WHEN 'builder' THEN 2 ELSE 3 END, name;
