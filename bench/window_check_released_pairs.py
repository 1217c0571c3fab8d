"""Window calibration on real judged pairs: the released CaseFacts intermediate files hold same-case pairs the
original pipeline's LLM judged contradictory (contradicted_claims.csv) or redundant (overlapping_claims.csv).
Embeds both claims of each pair with the local MiniLM model and prints the interval holding 95% of them.
(Same-case pairs and a different embedding model than the paper's cross-case windows: a sanity check of the
calibration on real data, not a reproduction of 0.70–0.95 / 0.80–0.97.)

    .venv/bin/python bench/window_check_released_pairs.py [SAMPLES_DIR] [--quick]

--quick: the first 10 pairs of each file, embedded by the model-free hashing embedder (`--embedder hashing` of
CaseFacts) instead of the model (CI checks that the bench still runs; its windows mean nothing).
"""
from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

from caseforge.embeddings import SentenceTransformerEmbedder
from caseforge.settings import load_settings
from caseforge.tasks.casefacts.calibration import calibrate_window
from caseforge.tasks.casefacts.embed import HashingEmbedder


def main(samples: Path, pairs: int | None, embedder) -> None:
    folder = samples / "casefacts" / "intermediate"
    for name, kind in (("contradicted_claims.csv", "contradiction"), ("overlapping_claims.csv", "redundancy")):
        with open(folder / name, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))[:pairs]
        start = time.perf_counter()
        left = embedder.encode([r["claim_1"] for r in rows])
        right = embedder.encode([r["claim_2"] for r in rows])
        sims = np.einsum("ij,ij->i", left, right)
        window = calibrate_window(sims, np.ones(len(sims), bool), coverage=0.95)
        print(f"{kind}: {len(rows)} judged-positive pairs, cosine median {np.median(sims):.3f}; "
              f"95% window {window.low:.2f}–{window.high:.2f} ({embedder.name}, {time.perf_counter() - start:.1f}s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", nargs="?", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="the first 10 pairs of each file, the hashing embedder instead of the model")
    args = parser.parse_args()
    main(args.samples or load_settings().samples_dir, 10 if args.quick else None,
         HashingEmbedder() if args.quick else SentenceTransformerEmbedder())
