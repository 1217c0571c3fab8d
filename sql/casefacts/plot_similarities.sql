-- The similarity of every judged calibration pair, per kind, for the nightly's similarity histogram.
SELECT kind, similarity FROM build.casefacts_calibration_samples WHERE similarity IS NOT NULL ORDER BY kind, pair_id;
