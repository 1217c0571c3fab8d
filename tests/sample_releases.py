"""Real releases of the three benchmarks from the samples, the cheapest way each is built in the tests: CaseFacts from
the six demo cases and AQuAECHR from the sample guide, both answered by the real `replay` backend from their
recorded files (tests/fixtures/replay: the small packaged models' output is refused by the content gates, README
"Two commands"), CaseGen from the sample Chinese judgments (no model needed). Each warehouse is kept beside its
release, so `caseforge eval` can score the same items."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@dataclass
class SampleReleases:
    root: Path
    warehouses: dict[str, Path] = field(default_factory=dict)
    releases: dict[str, Path] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _casefacts(samples: Path, db: Path, folder: Path) -> Path:
    from casefacts_double import DEMO_CONFIG, REPLAY_FILE, load_demo_cases

    from caseforge.llm.backends.replay import ReplayBackend
    from caseforge.stage_report import StageReport
    from caseforge.tasks.casefacts import pipeline, release
    from caseforge.tasks.casefacts.config import BuildConfig
    from caseforge.tasks.casefacts.embed import HashingEmbedder
    from caseforge.warehouse.connection import connect

    con = connect(db)
    try:
        load_demo_cases(con, samples, scratch=db.parent)
        config = BuildConfig(**DEMO_CONFIG)
        backends = {role: ReplayBackend(getattr(config, f"{role}_model"), replay_file=REPLAY_FILE)
                    for role in ("generator", "validator")}
        report = StageReport("casefacts (replay)")
        pipeline.run_pipeline(pipeline.BuildContext(con, None, report, config, backends, HashingEmbedder()))
        assert report.failures == [], report.failures
        return Path(release.write(con, folder).path)
    finally:
        con.close()


def _aquaechr(samples: Path, db: Path, folder: Path) -> Path:
    from aquaechr_support import GENERATOR_MODEL, JUDGE_MODEL, SAMPLE_LIMIT, SAMPLE_STRATEGIES, seed_sample_tables

    from caseforge.settings import load_settings
    from caseforge.tasks.aquaechr import build, release
    from caseforge.tasks.aquaechr.strategies import parse_strategies
    from caseforge.warehouse.connection import connect

    con = connect(db)
    seed_sample_tables(con, samples)
    con.close()
    config = build.BuildConfig(strategies=parse_strategies(SAMPLE_STRATEGIES), limit=SAMPLE_LIMIT)
    backends = build.make_backends("replay", GENERATOR_MODEL, JUDGE_MODEL, str(FIXTURES / "replay" / "aquaechr.jsonl"),
                                   None, None)
    report = build.run(load_settings(db), config, backends, None, None)
    assert report.failures == [], report.failures
    con = connect(db)
    try:
        return Path(release.write(con, folder).path)
    finally:
        con.close()


def _casegen(samples: Path, db: Path, folder: Path) -> Path:
    from caseforge.settings import load_settings
    from caseforge.tasks.casegen import pipeline, release
    from caseforge.tasks.cn import ingest
    from caseforge.warehouse.connection import connect

    settings = load_settings(db)
    ingest.refresh(settings, from_dir=str(samples / "cn"))
    assert pipeline.run_build(settings).counts["items_loaded"] > 0
    con = connect(db)
    try:
        return Path(release.write(con, folder).path)
    finally:
        con.close()


BUILDERS = {"casefacts": _casefacts, "aquaechr": _aquaechr, "casegen": _casegen}


def build_sample_releases(samples: Path, root: Path) -> SampleReleases:
    """The three releases under root/releases/<dataset>, their warehouses under root/<dataset>/."""
    built = SampleReleases(root)
    for name, builder in BUILDERS.items():
        started = time.monotonic()
        (root / name).mkdir(parents=True)
        built.warehouses[name] = root / name / "warehouse.duckdb"
        built.releases[name] = builder(samples, built.warehouses[name], root / "releases" / name)
        built.seconds[name] = round(time.monotonic() - started, 1)
    return built
