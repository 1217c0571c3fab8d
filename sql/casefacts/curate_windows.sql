-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_windows;
INSERT INTO curated.casefacts_windows SELECT * FROM staging.casefacts_windows;
