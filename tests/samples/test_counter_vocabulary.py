"""One counter vocabulary for every stage: each source (and the CaseGen builder) counts the records it adds
as `new`, those it changes as `changed`, and everything it quarantines as `quarantined`, whatever its
own detailed counters are called — so the nightly summary's columns mean the same for every row.

On a fresh warehouse each stage on its samples reports new > 0; run again on the same files it reports
new = 0 and changed = 0."""
from __future__ import annotations

import pytest
from oyez_subset import link_oyez_subset

from caseforge.config import settings as load_settings
from caseforge.tasks.barexam import ingest as barexam
from caseforge.tasks.casegen import pipeline as casegen
from caseforge.tasks.cn import ingest as cn
from caseforge.tasks.guides import ingest as guides
from caseforge.tasks.hudoc import ingest as hudoc
from caseforge.tasks.oyez import ingest as oyez

pytestmark = [pytest.mark.samples, pytest.mark.slow]


def _stages(samples_dir, subset):
    """Name → a function(settings) running the stage on its samples, in the nightly's order."""
    return {
        "oyez": lambda s: oyez.refresh(s, from_dir=str(subset / "oyez" / "cases"),
                                       legacy_table=str(subset / "oyez" / "legacy_justice_table.csv")),
        "hudoc": lambda s: hudoc.refresh(s, from_dir=str(samples_dir / "hudoc")),
        "guides": lambda s: guides.refresh(s, from_dir=str(samples_dir / "echr_guides")),
        "cn": lambda s: cn.refresh(s, from_dir=str(samples_dir / "cn")),
        "barexam": lambda s: barexam.refresh(s, from_dir=str(samples_dir / "barexam")),
        "casegen": lambda s: casegen.run_build(s),
    }


def test_every_stage_counts_new_then_nothing_on_a_rerun(samples_dir, tmp_path):
    subset = link_oyez_subset(samples_dir, tmp_path / "samples", 10, 20)
    settings = load_settings(tmp_path / "cf.duckdb")
    stages = _stages(samples_dir, subset)
    first = {name: run(settings).counts for name, run in stages.items()}
    second = {name: run(settings).counts for name, run in stages.items()}

    for name in stages:
        assert first[name].get("new", 0) > 0, (name, first[name])
        assert first[name].get("changed", 0) == 0, (name, first[name])
        assert (second[name].get("new", 0), second[name].get("changed", 0)) == (0, 0), (name, second[name])
        for counts in (first[name], second[name]):
            detailed = sum(v for k, v in counts.items() if k.endswith("_quarantined"))
            assert counts.get("quarantined", 0) >= detailed, (name, counts)
