-- Each claim's length in words, by label, for the nightly's lengths-by-label plot.
SELECT label, len(string_split(trim(claim), ' ')) AS words FROM curated.casefacts_claims ORDER BY label, claim_id;
