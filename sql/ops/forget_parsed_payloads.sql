-- What was recorded for these keys (_keys: key) of one source goes: for payloads parsed but not loaded whole (a
-- rejected batch), so the next run tries them again, and before a key is recorded again (the table has no index
-- to replace a row by: migration 181).
DELETE FROM ops.loaded_payloads
WHERE source = $source AND key IN (SELECT key FROM _keys);
