-- A build replaces the whole {schema}.{table} with what passed the gate ({schema}, {table}: checked identifiers).
DELETE FROM {schema}.{table};
INSERT INTO {schema}.{table} SELECT * FROM staging.{table};
