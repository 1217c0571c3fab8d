"""One counter vocabulary for every stage: each source (and the CaseGen builder) counts the records it adds
as `new`, those it changes as `changed`, and everything it quarantines as `quarantined`, whatever its
own detailed counters are called — so the nightly summary's columns mean the same for every row.

On a fresh warehouse each stage on its samples reports new > 0; run again on the same files it reports
new = 0 and changed = 0, and leaves every table a builder, an evaluation or a release reads as it was (its
fingerprint unchanged), so the nightly after an unchanged night rebuilds nothing."""
from __future__ import annotations

import pytest
from oyez_subset import link_oyez_subset

from caseforge.fingerprints import inputs_fingerprint
from caseforge.flows import registry
from caseforge.settings import load_settings
from caseforge.tasks.barexam import ingest as barexam
from caseforge.tasks.casegen import pipeline as casegen
from caseforge.tasks.cn import ingest as cn
from caseforge.tasks.guides import ingest as guides
from caseforge.tasks.hudoc import ingest as hudoc
from caseforge.tasks.oyez import ingest as oyez
from caseforge.warehouse.connection import open_warehouse
from caseforge.warehouse.statements import table_exists

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


def nightly_input_fingerprints(settings) -> dict[str, dict]:
    """Each table a builder, an evaluation or a release of the registry reads → its fingerprint (rows, content hash)."""
    tables = {t for group in (registry.BUILDERS, registry.EVALUATIONS, registry.RELEASES)
              for entry in group.values() for t in entry.inputs}
    with open_warehouse(settings.db_path, read_only=True) as con:
        return inputs_fingerprint(con, tuple(t for t in sorted(tables) if table_exists(con, t)))[1]


def test_every_stage_counts_new_then_nothing_on_a_rerun(samples_dir, tmp_path):
    subset = link_oyez_subset(samples_dir, tmp_path / "samples", 10, 20)
    settings = load_settings(tmp_path / "cf.duckdb")
    stages = _stages(samples_dir, subset)
    first = {name: run(settings).counts for name, run in stages.items()}
    fingerprints = nightly_input_fingerprints(settings)
    second = {name: run(settings).counts for name, run in stages.items()}

    again = nightly_input_fingerprints(settings)
    assert "curated.guide_citations" in again and "curated.casegen_items" in again
    assert {t: fp for t, fp in again.items() if fp != fingerprints.get(t)} == {}, "a re-run changed what builders read"

    for name in stages:
        assert first[name].get("new", 0) > 0, (name, first[name])
        assert first[name].get("changed", 0) == 0, (name, first[name])
        assert (second[name].get("new", 0), second[name].get("changed", 0)) == (0, 0), (name, second[name])
        for counts in (first[name], second[name]):
            detailed = sum(v for k, v in counts.items() if k.endswith("_quarantined"))
            assert counts.get("quarantined", 0) >= detailed, (name, counts)
