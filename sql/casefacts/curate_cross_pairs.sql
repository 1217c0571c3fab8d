-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_cross_pairs;
INSERT INTO curated.casefacts_cross_pairs SELECT * FROM staging.casefacts_cross_pairs;
