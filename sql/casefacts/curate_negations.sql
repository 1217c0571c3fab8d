-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_negations;
INSERT INTO curated.casefacts_negations SELECT * FROM staging.casefacts_negations;
