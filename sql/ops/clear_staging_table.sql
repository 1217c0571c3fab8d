-- Empty staging.{table} before its next batch ({table} is a checked identifier).
DELETE FROM staging.{table};
