-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_merges;
INSERT INTO curated.casefacts_merges SELECT * FROM staging.casefacts_merges;
