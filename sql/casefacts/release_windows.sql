-- The calibrated similarity windows of the build, for the dataset card.
SELECT kind, low, high, positives, judged, method FROM build.casefacts_windows ORDER BY kind;
