-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_overrulings;
INSERT INTO curated.casefacts_overrulings SELECT * FROM staging.casefacts_overrulings;
