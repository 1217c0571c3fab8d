-- Claims per label, for the nightly's label-distribution plot.
SELECT label, count(*) AS n FROM curated.casefacts_claims GROUP BY label ORDER BY label;
