"""Source health on live nights (issue 43): the nightly's real HUDOC and Oyez sources fetch from recorded upstreams
on loopback ([upstream] set to a LoopbackUpstreamDouble that answers from the samples), night after night, on one
warehouse:

1. an ordinary first night: everything new, every source green, the releases written;
2. HUDOC's query returns nothing and Oyez's term list is cut to a tenth: each breaks the listing rule, a failed
   `source health` stage named in the summary and `status`, and the releases made from them are held back;
3. HUDOC changes its page layout: new judgments whose sections each print as one block parse into 13 paragraphs
   instead of 151, passing every gate, and break the yield rule (the Oyez release is written: Oyez is healthy);
4. a quiet night on a normal gap (nothing new a day after the last news, as the nights before): green.

The issue names a layout change of renamed class names: this reader keys on <p> elements and font sizes, not on
class names (renaming them all in the sample judgment still gives 151 paragraphs, checked below), so the night
uses a layout that does collapse the paragraphs, with its class names renamed too.

The builder and the AQuAECHR release that read HUDOC's tables are test doubles carrying the registry's inputs
and outputs (no model runs); the scotus release is the real one."""
from __future__ import annotations

import json
import os
import re
from datetime import date, timedelta
from pathlib import Path

import pytest

from caseforge.cli.status import status_data
from caseforge.flows import registry
from caseforge.flows.nightly_report import publish_details
from caseforge.flows.nightly_runner import NightlyOptions, run_nightly
from caseforge.settings import load_settings, overriding
from caseforge.stage_report import StageReport
from caseforge.tasks.hudoc.paragraphs import main_heading
from caseforge.tasks.hudoc.readers import parse_document
from caseforge.warehouse.connection import connect

from registry_doubles import BuilderDouble, ReleaseDouble
from upstream_doubles import LoopbackUpstreamDouble, Route

pytestmark = [pytest.mark.slow, pytest.mark.samples]

TODAY = date.today()
FIRST_NIGHT = [TODAY - timedelta(days=d) for d in (12, 11, 10, 9)]       # judgments of night 1
THIRD_NIGHT = [TODAY - timedelta(days=d) for d in (3, 2, 2, 1)]          # new judgments of night 3
OYEZ_LISTED = 30


def renamed_classes(html: str) -> str:
    return re.sub(r"\.s([0-9A-F]{6,8})\b|(class=['\"])s([0-9A-F]{6,8})",
                  lambda m: f".n{m[1]}" if m[1] else f"{m[2]}n{m[3]}", html)


def sections_as_one_block(html: str) -> str:
    """The new layout: each main section's paragraphs print as one <p>, separated by line breaks."""
    out, run, section = [], [], None

    def close():
        if run:
            out.append(re.match(r"<p\b[^>]*>", run[0])[0]
                       + "<br/>".join(re.sub(r"^<p\b[^>]*>|</p>$", "", p, flags=re.S) for p in run) + "</p>")
            run.clear()

    for part in re.split(r"(<p\b[^>]*>.*?</p>)", html, flags=re.S):
        if not part.startswith("<p"):
            if part.strip():
                close()
            out.append(part)
            continue
        heading = main_heading(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", part)).strip())
        if heading:
            close()
            section = heading
            out.append(part)
        elif section and section != "OPERATIVE":
            run.append(part)
        else:
            close()
            out.append(part)
    close()
    return "".join(out)


class RecordedHudoc:
    """HUDOC's query API and body route, answering from recorded judgments: a query gets the judgments whose
    kpdate lies in its window, page by page; a body request the judgment's HTML. `listing` off: every query
    answers no results (a query that silently returns nothing)."""

    def __init__(self, samples: Path):
        self.body = (samples / "hudoc" / "html" / "001-192223.html").read_text(encoding="utf-8")
        page = json.loads((samples / "hudoc" / "metadata" /
                           "RECONSTRUCTED_query_results_page_from_echrod_columns.json").read_text(encoding="utf-8"))
        self.record = page["results"][0]["columns"]
        self.judgments: dict[str, tuple[date, str]] = {}
        self.listing = True

    def add(self, number: int, day: date, layout=lambda html: html) -> None:
        itemid = f"001-{900000 + number}"
        html = re.sub(r"\b(applicant|Government)\b", lambda m: f"{m[1]}{number}", self.body)
        self.judgments[itemid] = (day, layout(html))

    def query(self, q: dict) -> Route:
        expression = q.get("query", [""])[0]
        start, end = (date.fromisoformat(d) for d in re.findall(r'kpdate[<>=]+"(\d{4}-\d{2}-\d{2})', expression))
        hits = sorted(i for i, (day, _) in self.judgments.items() if start <= day < end) if self.listing else []
        first, length = int(q.get("start", ["0"])[0]), int(q.get("length", ["500"])[0])
        results = [{"columns": {**self.record, "itemid": i, "doctype": "HEJUD", "languageisocode": "ENG",
                                "docname": f"CASE OF RECORDED {i} v. STATE", "isplaceholder": "False",
                                "kpdate": f"{self.judgments[i][0].month}/{self.judgments[i][0].day}/"
                                          f"{self.judgments[i][0].year} 12:00:00 AM",
                                "judgementdate": f"{self.judgments[i][0]:%d/%m/%Y} 00:00:00",
                                "kpdateAsText": f"{self.judgments[i][0]:%d/%m/%Y} 00:00:00"}}
                   for i in hits[first:first + length]]
        return Route(200, json.dumps({"resultcount": len(hits), "results": results}).encode(),
                     {"Content-Type": "application/json"})

    def html(self, q: dict) -> Route:
        found = self.judgments.get(q.get("id", [""])[0])
        return Route(200, found[1].encode(), {"Content-Type": "text/html"}) if found else Route(404, b"no body")


class RecordedOyez:
    """Oyez's case list and case details from the sample case files; `listed` cases in the list."""

    def __init__(self, samples: Path, base_url_of):
        self.cases = {}
        for path in sorted((samples / "oyez" / "cases").glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data.get("href"), str) and data.get("ID") and "/cases/" in data["href"]:
                self.cases[data["href"].split("/cases/", 1)[1]] = data
        self.base_url_of = base_url_of
        self.listed = OYEZ_LISTED

    def routes(self) -> dict:
        routes = {"/cases": self.case_list}
        for tail, data in self.cases.items():
            routes[f"/cases/{tail}"] = lambda q, data=data, tail=tail: Route(
                200, json.dumps({**data, "href": f"{self.base_url_of()}/cases/{tail}"}).encode(),
                {"Content-Type": "application/json"})
        return routes

    def case_list(self, q: dict) -> Route:
        summaries = [{"ID": data["ID"], "name": data.get("name"), "href": f"{self.base_url_of()}/cases/{tail}"}
                     for tail, data in list(self.cases.items())[:self.listed]]
        return Route(200, json.dumps(summaries).encode(), {"Content-Type": "application/json"})


def doubles_of_the_hudoc_chain(calls: list) -> tuple[dict, dict]:
    """The AQuAECHR builder and release as test doubles with the registry's inputs and outputs: what reads
    HUDOC's tables, without a model."""
    entry, release = registry.BUILDERS["aquaechr"], registry.RELEASES["aquaechr"]
    builder = BuilderDouble("aquaechr", "AQuAECHR (double)", None, inputs=entry.inputs, outputs=entry.outputs,
                            nightly=True, builder=lambda settings, **_: calls.append("built") or StageReport("double"))

    def write(con, folder):
        calls.append("released")
        Path(folder).mkdir(parents=True, exist_ok=True)

    return {"aquaechr": builder}, {"aquaechr": ReleaseDouble("aquaechr", "AQuAECHR (double)", None,
                                                            inputs=release.inputs, writer=write)}


@pytest.fixture(scope="module")
def nights(samples_dir, prefect_server, tmp_path_factory):
    """The four nights on one warehouse (their flows on the session's loopback Prefect server); each night's
    result, summary and `status` as they were that night."""
    from prefect import flow
    from prefect.settings import PREFECT_API_URL, temporary_settings

    import caseforge.flows.nightly  # noqa: F401  (wires Prefect in: artifacts reach the flow run, as the nightly's do)

    work = tmp_path_factory.mktemp("source_health")
    settings = load_settings(work / "cf.duckdb")
    con = connect(settings.db_path)
    con.execute("INSERT INTO curated.aquaechr_qa (qa_id, guide_id, window_id, strategy, question, answer, kept, "
                "run_id, updated_at) VALUES ('q1', 'g', 'w', 'i', 'Q?', 'A.', true, 0, now())")
    con.close()
    hudoc = RecordedHudoc(samples_dir)
    for number, day in enumerate(FIRST_NIGHT):
        hudoc.add(number, day)
    double = LoopbackUpstreamDouble()
    oyez = RecordedOyez(samples_dir, lambda: double.url)
    double.routes.update({"/app/query/results": hudoc.query, "/app/conversion/docx/html/body": hudoc.html,
                          **oyez.routes()})
    calls: list[str] = []
    builders, releases = doubles_of_the_hudoc_chain(calls)
    releases["scotus"] = registry.RELEASES["scotus"]
    sources = {name: registry.SOURCES[name] for name in ("hudoc", "oyez")}
    seen = {}

    @flow(name="source-health-night")
    def night_flow():
        """One night as the nightly flow ends it: its artifacts published for the UI."""
        from prefect.context import FlowRunContext

        result = run_nightly(settings, NightlyOptions(release_dir=work / "releases"), sources=sources,
                             builders=builders, evaluations={}, releases=releases, plots={})
        publish_details(result, [])
        return result, str(FlowRunContext.get().flow_run.id)

    def night(name: str) -> None:
        before = len(calls)
        result, flow_run_id = night_flow()
        found = prefect_server.api("POST", "/artifacts/filter", headers={"content-type": "application/json"},
                                   content=json.dumps({"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}})).json()
        con = connect(settings.db_path)
        try:
            shown = json.loads(json.dumps(status_data(con, limit=5), default=str))
        finally:
            con.close()
        seen[name] = {"result": result, "summary": (result.run_dir / "summary.md").read_text(), "status": shown,
                      "calls": calls[before:], "artifacts": {a["key"]: a for a in found if a.get("key")}}

    os.environ["CASEFORGE_RPS"] = "1000"                # loopback: no politeness delay between requests
    with double, overriding({"upstream": {"hudoc": double.url, "oyez": double.url}}), \
            temporary_settings({PREFECT_API_URL: f"{prefect_server.url}/api"}):
        try:
            night("ordinary")
            hudoc.listing, oyez.listed = False, OYEZ_LISTED // 10
            night("listings cut")
            hudoc.listing, oyez.listed = True, OYEZ_LISTED
            for number, day in enumerate(THIRD_NIGHT, start=len(FIRST_NIGHT)):
                hudoc.add(number, day, lambda html: sections_as_one_block(renamed_classes(html)))
            night("layout changed")
            con = connect(settings.db_path)            # the nights so far as a daily schedule ran them
            runs = [r for (r,) in con.execute("SELECT DISTINCT run_id FROM ops.source_health ORDER BY run_id").fetchall()]
            for days_ago, run_id in zip((3, 2, 1), runs):
                con.execute("UPDATE ops.source_health SET night_at = night_at - to_days(?) WHERE run_id = ?",
                            [days_ago, run_id])
            con.close()
            night("quiet")
        finally:
            os.environ.pop("CASEFORGE_RPS", None)
    return seen


def health(night: dict) -> dict[str, tuple[str, str]]:
    return {o.name: (o.status, o.note) for o in night["result"].outcomes if o.stage == "source health"}


def stage(night: dict, kind: str, name: str) -> dict:
    [row] = [s for s in night["status"]["last_nightly_stages"] if (s["stage"], s["name"]) == (kind, name)]
    return row


def test_the_reader_ignores_renamed_class_names_and_the_new_layout_collapses_paragraphs(samples_dir):
    html = (samples_dir / "hudoc" / "html" / "001-192223.html").read_text(encoding="utf-8")
    assert len(parse_document("001-1", html.encode(), "x").rows) == 151
    assert len(parse_document("001-1", renamed_classes(html).encode(), "x").rows) == 151
    collapsed = parse_document("001-1", sections_as_one_block(renamed_classes(html)).encode(), "x")
    assert (len(collapsed.rows), collapsed.problems, collapsed.has_operative_part) == (13, [], True)


def test_an_ordinary_first_night_is_green_and_releases(nights):
    night = nights["ordinary"]
    assert {name: status for name, (status, _) in health(night).items()} == {"hudoc": "succeeded", "oyez": "succeeded"}
    assert night["result"].ok, night["result"].failures()
    assert "released" in night["calls"]
    assert "listed 4, fetched" in health(night)["hudoc"][1] and f"listed {OYEZ_LISTED}" in health(night)["oyez"][1]


def test_a_hudoc_query_returning_nothing_and_an_oyez_list_cut_to_a_tenth_break_the_listing_rule(nights):
    night = nights["listings cut"]
    found = health(night)
    assert found["hudoc"][0] == "failed" and found["hudoc"][1].startswith(
        "listing: the upstream listed 0, 0% of the 4 it listed on")
    assert found["oyez"][0] == "failed" and found["oyez"][1].startswith(
        f"listing: the upstream listed 3, 10% of the {OYEZ_LISTED} it listed on")
    assert not night["result"].ok
    for name in ("hudoc", "oyez"):
        assert f"| source health | {name} | failed |" in night["summary"]
        assert stage(night, "source health", name)["status"] == "failed"
        assert "listing: the upstream listed" in stage(night, "source health", name)["message"]
    nightly = next(r for r in night["status"]["runs"] if r["kind"] == "nightly")
    assert nightly["status"] == "failed" and "source health hudoc" in nightly["message"], nightly
    held = {name: stage(night, "export", name) for name in ("aquaechr", "scotus")}
    assert {name: row["status"] for name, row in held.items()} == {"aquaechr": "skipped", "scotus": "skipped"}
    assert held["scotus"]["message"] == "held back: curated.scotus_cases comes from source health oyez, which failed " \
                                        "tonight"
    assert held["aquaechr"]["message"].startswith(
        "held back: curated.aquaechr_qa comes from builder aquaechr, which reads curated.echr_paragraphs from "
        "source health hudoc, which failed tonight (listing: the upstream listed 0")
    assert "released" not in night["calls"]
    artifact = night["artifacts"]["nightly-source-health"]          # what the Prefect UI shows
    assert "hudoc failed, oyez failed" in artifact["description"], artifact["description"]
    assert "listing: the upstream listed 0" in json.dumps(artifact["data"])


def test_a_hudoc_layout_that_collapses_paragraphs_breaks_the_yield_rule(nights):
    night = nights["layout changed"]
    found = health(night)
    assert found["oyez"][0] == "succeeded", found
    assert found["hudoc"][0] == "failed" and found["hudoc"][1].startswith(
        "yield: paragraphs per judgment fell to 13.00 over 4 parsed tonight, from a baseline of 151.00"), found
    result = night["result"]
    [source] = [o for o in result.outcomes if (o.stage, o.name) == ("source", "hudoc")]
    assert source.status == "succeeded" and source.counts["new"] == 4         # no gate stopped it
    assert f"| source health | hudoc | failed | " in night["summary"]
    assert stage(night, "source health", "hudoc")["message"].startswith("yield: paragraphs per judgment fell to 13.00")
    assert stage(night, "export", "aquaechr")["message"].startswith("held back: curated.aquaechr_qa comes from "
                                                                    "builder aquaechr")
    assert stage(night, "export", "scotus")["status"] != "skipped" or \
        stage(night, "export", "scotus")["message"] == "inputs unchanged"


def test_a_quiet_night_on_a_normal_gap_stays_green(nights):
    night = nights["quiet"]
    assert {name: status for name, (status, _) in health(night).items()} == {"hudoc": "succeeded", "oyez": "succeeded"}
    assert night["result"].ok, night["result"].failures()
    assert all(o.counts.get("new", 0) == 0 for o in night["result"].outcomes if o.stage == "source")
    assert "held back" not in night["summary"]
