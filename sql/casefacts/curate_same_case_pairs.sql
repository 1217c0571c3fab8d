-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_same_case_pairs;
INSERT INTO curated.casefacts_same_case_pairs SELECT * FROM staging.casefacts_same_case_pairs;
