"""Every committed replay fixture, recorded from its scripted double in one place, and the request
identities those recordings produce.

    .venv/bin/python tests/request_identities.py record            # re-record tests/fixtures/replay/*.jsonl
                                                                   # and its probe_identities.json
    .venv/bin/python tests/request_identities.py identities OUT    # record into a scratch folder and write
                                                                   # {recording: {step: [identity, ...]}} to OUT

Both also run (and report as <fixture>_probe.jsonl) the pipeline steps that feed requests from retrieval or
embeddings but are not part of a fixture (dense and hybrid retrieval, QLM and dense advocates, K-Means representative
selection feeding CaseGen drafts): `record` keeps only their identities (PROBES). tests/integration/
test_request_identity_stability.py runs `identities` under other thread counts, BLAS settings, CPU feature sets and
hash seeds than `record` ran with and demands the committed identities. Both modes need the real samples
(CASEFORGE_SAMPLES, default ../shared/samples).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE / "unit", HERE / "samples", HERE / "fixtures" / "casegen"):
    sys.path.insert(0, str(folder))

REPLAY_DIR = HERE / "fixtures" / "replay"
PROBES = REPLAY_DIR / "probe_identities.json"     # the probe steps' identities, as `record` found them


def samples_folder() -> Path:
    return Path(os.environ.get("CASEFORGE_SAMPLES", HERE.parent.parent / "shared" / "samples"))


def record_aquaechr_eval(samples: Path, work: Path, out: Path, probe: bool) -> None:
    import test_aquaechr_eval_replay

    test_aquaechr_eval_replay.record(samples, work, out, extra_retrievers=("dense", "hybrid") if probe else ())


def record_aquaechr(samples: Path, work: Path, out: Path, probe: bool) -> None:
    import aquaechr_support

    aquaechr_support.record_replay(samples, work / "aquaechr.duckdb", out)


def record_case_barexam(samples: Path, work: Path, out: Path, probe: bool) -> None:
    import test_case_flow

    test_case_flow.record(samples, work, out, extra_retrievers=("qlm", "dense") if probe else ())


def record_casefacts(samples: Path, work: Path, out: Path, probe: bool) -> None:
    import casefacts_double

    casefacts_double.record_replay(samples, work / "casefacts.duckdb", out)


def record_casefacts_review(samples: Path, work: Path, out: Path, probe: bool) -> None:
    import review_support

    review_support.record_review_replay(samples, work, out)


def record_casegen(samples: Path, work: Path, out: Path, probe: bool) -> None:
    import scripted_double

    scripted_double.record_replay(work / "casegen.duckdb", out, samples, work / "casegen-reports")
    if probe:
        casegen_from_representatives(samples, work)


def casegen_from_representatives(samples: Path, work: Path) -> None:
    """CN dumps → filters → K-Means representatives → CaseGen items → drafts by the double."""
    import scripted_double

    from caseforge.archive import RawArchive
    from caseforge.settings import load_settings
    from caseforge.run_record import start_run
    from caseforge.stage_report import StageReport
    from caseforge.tasks.casegen import pipeline
    from caseforge.tasks.casegen.eval import pipeline as eval_pipeline
    from caseforge.tasks.cn import curate, ingest
    from caseforge.tasks.cn.filters import FilterConfig
    from caseforge.tasks.cn.select import TFIDF
    from caseforge.warehouse.connection import connect

    db = work / "casegen-representatives.duckdb"
    con = connect(db)
    run_id, report = start_run(con, "ingest", "cn"), StageReport("cn")
    folder = samples / "cn"
    for batch in ingest.batches_of_records(con, run_id, RawArchive(con), folder, ingest.dump_files(folder), report):
        ingest.load_judgments(con, run_id, ingest.parse_batch(con, run_id, batch, report), report)
    config = FilterConfig()
    curate.apply_filters(con, config, report)
    curate.select(con, config, TFIDF, 12, 4, 0, report)
    con.close()
    scripted_double.install()
    pipeline.run_build(load_settings(db), limit=3)
    eval_pipeline.run_eval(load_settings(db), eval_pipeline.EvalParams(models=[scripted_double.DRAFTER], llm="scripted-double",
                                                        judge_model=scripted_double.JUDGE,
                                                        out_dir=str(work / "casegen-rep-reports"), plots=False))
    from caseforge.llm.backends.replay import export_replay

    con = connect(db)
    export_replay(con, work / "casegen_probe.jsonl")
    con.close()


RECORDINGS = {
    "aquaechr_eval.jsonl": record_aquaechr_eval,
    "aquaechr.jsonl": record_aquaechr,
    "case_barexam.jsonl": record_case_barexam,
    "casefacts.jsonl": record_casefacts,
    "casefacts_review.jsonl": record_casefacts_review,
    "casegen.jsonl": record_casegen,
}


def identities_by_step(replay_file: Path) -> dict[str, list[str]]:
    steps: dict[str, set[str]] = {}
    for line in replay_file.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        steps.setdefault(record["step"], set()).add(record["identity"])
    return {step: sorted(ids) for step, ids in sorted(steps.items())}


def committed_identities() -> dict[str, dict[str, list[str]]]:
    """{recording: {step: [identity, ...]}} of the committed fixtures and probes."""
    found = {name: identities_by_step(REPLAY_DIR / name) for name in RECORDINGS}
    return {**found, **json.loads(PROBES.read_text(encoding="utf-8"))}


def record_all(target: Path | None, probe: bool) -> dict[str, dict[str, list[str]]]:
    """Run every recording; write the fixtures to `target` (None: a scratch folder) and return identities."""
    samples = samples_folder()
    if not samples.is_dir():
        raise SystemExit(f"real samples not found at {samples} (set CASEFORGE_SAMPLES)")
    found = {}
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        out_dir = target or work / "replay"
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, record in RECORDINGS.items():
            folder = work / name.split(".")[0]
            folder.mkdir()
            out = out_dir / name
            record(samples, folder, out, probe)
            found[name] = identities_by_step(out)
            for extra in (out.with_name(out.stem + "_probe.jsonl"), folder / f"{out.stem}_probe.jsonl"):
                if extra.exists():
                    found[extra.name] = identities_by_step(extra)
    return found


def main(argv: list[str]) -> int:
    if argv[:1] == ["record"]:
        found = record_all(REPLAY_DIR, probe=True)
        probes = {name: steps for name, steps in found.items() if name not in RECORDINGS}
        for name in probes:
            (REPLAY_DIR / name).unlink(missing_ok=True)
        PROBES.write_text(json.dumps(probes, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        for name, steps in found.items():
            print(f"{name}: {sum(len(v) for v in steps.values())} requests in {len(steps)} steps")
        return 0
    if argv[:1] == ["identities"] and len(argv) == 2:
        Path(argv[1]).write_text(json.dumps(record_all(None, probe=True), indent=1, sort_keys=True))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
