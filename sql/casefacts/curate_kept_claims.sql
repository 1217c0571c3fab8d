-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_kept_claims;
INSERT INTO curated.casefacts_kept_claims SELECT * FROM staging.casefacts_kept_claims;
