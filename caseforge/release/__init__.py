"""Release snapshots: Parquet + JSONL per table, a dataset card, Croissant metadata and a manifest, byte-identical
on re-runs.

`write_release(folder, dataset, tables, card, columns=..., date_column=...)` writes the release into `folder`
(replacing an older one there as a whole):

    README.md                 the dataset card: Hugging Face front matter (licence, languages, tasks, size, configs
                              with one data file per split), columns with their types and meanings, the fresh split
                              and its cutoff, intended use and limitations, how it was built (models, prompt hashes,
                              quality gates, payload provenance), source licences, the method's citation, version
    croissant.json            Croissant 1.1 metadata: one FileObject per data file, one RecordSet per table
    release.json              what the next release needs: version, data digest, data date, fresh cutoff
    data/<table>.parquet      rows sorted canonically, fixed writer settings
    data/<table>.jsonl        the same rows, one JSON object a line
    data/fresh.parquet|.jsonl the rows of every table whose source document is dated after the fresh cutoff
    judge/confusion.png       the judge card's confusion matrices (a benchmark an LLM judge filtered, once reviewed)
    provenance/source_payloads.tsv   source, key, sha256 of every upstream payload behind the rows
    MANIFEST.sha256           sha256 of every other file, sorted by path

Nothing depends on when, where or by how many threads it was written: the release's date is its data date (the
newest source-document date in it), its version comes from that date and the digest of its rows, and the fresh
cutoff is chosen from the data, the settings and the previous release in the same folder. Same input, same bytes.

The modules (each imports only those listed before it):

    layout.py      the file names in a release folder and the name of the fresh split
    licences.py    LICENCES of the sources, the SPDX ids and URLs of the licence a release carries, licence_id
    fresh.py       FreshCutoff, choose_cutoff, the previous release's release.json, the `[release]` settings
    content.py     ReleaseContent: what the card, croissant.json and release.json are written from
    card.py        render_card (README.md with its front matter), md_table, card_rows, release_rows, size_category
    croissant.py   croissant() (croissant.json), croissant_type, CROISSANT_CONTEXT, validate_croissant
    writer.py      write_release, NothingToRelease, ReleaseHeld, Release, canonical_order, read_manifest, verify_release

This package re-exports the names used outside it.
"""
from caseforge.release.card import card_rows, md_table, release_rows
from caseforge.release.croissant import validate_croissant
from caseforge.release.layout import CROISSANT, FRESH, MANIFEST, METADATA
from caseforge.release.licences import LICENCE_IDS, LICENCES
from caseforge.release.writer import NothingToRelease, Release, ReleaseHeld, read_manifest, verify_release, write_release

__all__ = [
    "CROISSANT", "FRESH", "LICENCES", "LICENCE_IDS", "MANIFEST", "METADATA", "NothingToRelease", "Release",
    "card_rows", "md_table", "read_manifest", "release_rows", "validate_croissant", "verify_release", "write_release",
]
