-- Payloads (_failed: key) that were parsed but not loaded whole (a problem, a quarantined row, a rejected
-- batch): whatever was recorded for their key goes, so the next run tries them again.
DELETE FROM ops.loaded_payloads
WHERE source = $source AND key IN (SELECT key FROM _failed);
