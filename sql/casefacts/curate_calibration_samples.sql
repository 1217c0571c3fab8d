-- A build replaces the whole stage table with what passed the gate.
DELETE FROM curated.casefacts_calibration_samples;
INSERT INTO curated.casefacts_calibration_samples SELECT * FROM staging.casefacts_calibration_samples;
