-- A stage table as the next stage reads it, in key order: later stages index rows by position.
SELECT * FROM {schema}.{table} ORDER BY {key};
