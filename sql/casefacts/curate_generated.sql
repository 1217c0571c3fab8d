-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_generated;
INSERT INTO curated.casefacts_generated SELECT * FROM staging.casefacts_generated;
