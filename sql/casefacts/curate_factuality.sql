-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_factuality;
INSERT INTO curated.casefacts_factuality SELECT * FROM staging.casefacts_factuality;
