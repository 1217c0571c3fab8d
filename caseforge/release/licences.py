"""The licences a release names: each source's terms (for the card's licence table and Croissant provenance), and
the SPDX-style id and URL of the licence a release itself carries."""
from __future__ import annotations

# Licence of each source as its publisher or the archive we took it from states it (shared/README.md).
LICENCES: dict[str, str] = {
    "oyez": "CC BY-NC 4.0 (Oyez, oyez.org); non-commercial use with attribution",
    "scotus_legacy": "no licence stated (Oyez-derived 'justice.csv' table); Oyez content is CC BY-NC",
    "hudoc": "ECHR HUDOC: free reuse for non-commercial purposes with the source named (Court's terms of use)",
    "echr_guides": "ECHR Case-Law Guides: free reuse for non-commercial purposes with the source named",
    "cn": "China Judgments Online documents (public court judgments); research copies carry no licence",
    "casefacts": "CC BY-NC 4.0 (CaseFacts, idirlab/supreme-court-dataset)",
    "aquaechr": "MIT (AQuAECHR, santoshTYSS/AQuAECHR)",
    "casegen": "CC BY-NC-SA 4.0 (CaseGen, CSHaitao/CaseGen)",
    "barexam": "CC BY-SA 4.0 (reglab/barexam_qa per its dataset card)",
}

# The SPDX-style licence id (as Hugging Face cards spell it) of each LICENCES entry a release can carry.
LICENCE_IDS: dict[str, str] = {
    "oyez": "cc-by-nc-4.0",
    "casefacts": "cc-by-nc-4.0",
    "aquaechr": "mit",
    "casegen": "cc-by-nc-sa-4.0",
    "barexam": "cc-by-sa-4.0",
}
LICENCE_URLS: dict[str, str] = {
    "cc-by-nc-4.0": "https://creativecommons.org/licenses/by-nc/4.0/",
    "cc-by-nc-sa-4.0": "https://creativecommons.org/licenses/by-nc-sa/4.0/",
    "cc-by-sa-4.0": "https://creativecommons.org/licenses/by-sa/4.0/",
    "mit": "https://opensource.org/license/mit",
}


def licence_id(card: dict) -> str:
    """The SPDX-style id of the licence the release carries (the card's `licence`, a LICENCES entry)."""
    try:
        return LICENCE_IDS[card["licence"]]
    except KeyError:
        raise ValueError(f"card licence {card.get('licence')!r} has no SPDX id in caseforge.release.LICENCE_IDS") from None
