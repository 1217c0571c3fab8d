"""The names of the files in a release folder, and of the split every release has (see caseforge.release)."""
MANIFEST = "MANIFEST.sha256"
CROISSANT = "croissant.json"
METADATA = "release.json"
PAYLOADS = "provenance/source_payloads.tsv"
FRESH = "fresh"
JUDGE_PICTURE = "judge/confusion.png"     # the judge card's confusion matrices (caseforge.review.card)
