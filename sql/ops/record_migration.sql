-- A migration applied (in the same transaction as the migration itself).
INSERT INTO ops.migrations (number, name) VALUES (?, ?);
