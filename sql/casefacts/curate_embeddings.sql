-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_embeddings;
INSERT INTO curated.casefacts_embeddings SELECT * FROM staging.casefacts_embeddings;
