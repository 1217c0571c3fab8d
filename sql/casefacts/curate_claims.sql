-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_claims;
INSERT INTO curated.casefacts_claims SELECT * FROM staging.casefacts_claims;
