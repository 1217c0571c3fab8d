"""Test doubles for the night's problems as a person reads them: a builder double that puts what a weak model
wrote through the real gate (expectations/casefacts_generated.json), which quarantines it with its reasons."""
from caseforge.load import CuratedTable, batch_frame, gate_and_load
from caseforge.stage_report import StageReport
from caseforge.warehouse.connection import connect

from registry_doubles import BuilderDouble, ReleaseDouble, SourceDouble

# What SmolLM2-135M wrote in `make run` (README, Two commands): each fails rules of the claim suite.
DEGENERATE_CLAIMS = {"c1-0": "statement123456789", "c1-1": ";, and, and, and, and, and, and, and, and"}


def alpha_source(settings, **kwargs):
    con = connect(settings.db_path)
    try:
        con.execute("CREATE TABLE IF NOT EXISTS curated.alpha (id INTEGER PRIMARY KEY, label VARCHAR)")
        con.execute("INSERT OR REPLACE INTO curated.alpha VALUES (1, 'a')")
    finally:
        con.close()
    report = StageReport(name="alpha")
    report.add("new", 1)
    return report


def degenerate_claims_builder(settings, **kwargs):
    """Gates DEGENERATE_CLAIMS as the CaseFacts builder gates what its model wrote: every one is quarantined."""
    report = StageReport(name="claims")
    con = connect(settings.db_path)
    try:
        frame = batch_frame([{"claim_id": k, "claim": v} for k, v in DEGENERATE_CLAIMS.items()], ["claim_id", "claim"])
        outcome = gate_and_load(con, None, frame, CuratedTable("casefacts_generated", "unused.sql", "claim_id"))
    finally:
        con.close()
    outcome.report_to(report, "generated")
    return report


def registries(tmp_path) -> dict:
    """run_nightly's keyword arguments: one source, the degenerate builder, no evaluation, one release."""
    def write(con, folder):
        folder.mkdir(parents=True, exist_ok=True)

    return {"sources": {"alpha": SourceDouble("alpha", "alpha (double)", None, archive_source="alpha",
                                              refresh=alpha_source)},
            "builders": {"claims": BuilderDouble("claims", "claims (double)", None, inputs=("curated.alpha",),
                                                 nightly=True, builder=degenerate_claims_builder)},
            "evaluations": {},
            "releases": {"alpha": ReleaseDouble("alpha", "alpha (double)", None, inputs=("curated.alpha",),
                                                writer=write)},
            "plots": {}}
