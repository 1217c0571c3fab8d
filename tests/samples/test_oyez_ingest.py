"""The Oyez refresh end to end through the live code path, against a scripted Oyez server double.

The double serves real sample payloads from CASEFORGE_SAMPLES and injects the failures the
architecture must survive: truncated JSON, a non-JSON body, a case without a name, an HTTP 500
then success, and a 429 with Retry-After.
"""
import json
from pathlib import Path

import httpx
import pytest

from caseforge.settings import Settings
from caseforge.tasks.oyez import ingest
from warehouse_rows import rows as table

pytestmark = pytest.mark.samples

CASE_FILES = ["1971.70-18", "1789_1850.10us87", "1789_1850.17us316", "2021.19-1392", "2015.14-1096",
              "1789_1850.none", "1962.155", "1940_1955.316us455"]


class OyezServerDouble:
    """Serves /cases (the list) and /cases/{term}/{docket} from sample files, with scripted faults."""

    def __init__(self, samples_dir: Path, files=CASE_FILES):
        self.details = {}
        self.summaries = []
        for name in files:
            body = (samples_dir / "oyez" / "cases" / f"{name}.json").read_bytes()
            data = json.loads(body)
            path = "/" + data["href"].split("api.oyez.org/")[1]
            self.details[path] = body
            self.summaries.append({k: data.get(k) for k in ("ID", "name", "href", "term", "docket_number", "timeline")})
        self.faults: dict[str, list[httpx.Response]] = {}
        self.overrides: dict[str, bytes] = {}
        self.requests: list[str] = []
        self.fail_after: int | None = None

    def add_case(self, href: str, body: bytes, summary: dict) -> None:
        self.details["/" + href.split("api.oyez.org/")[1]] = body
        self.summaries.append(summary)

    def list_body(self) -> bytes:
        return json.dumps(self.summaries).encode()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.requests.append(path)
        if self.fail_after is not None and len(self.requests) > self.fail_after:
            raise KeyboardInterrupt("killed mid-run")
        if self.faults.get(path):
            return self.faults[path].pop(0)
        if path == "/cases":
            body = self.list_body()
            etag = '"list-%d"' % (hash(body) & 0xFFFFFF)
            if request.headers.get("If-None-Match") == etag:
                return httpx.Response(304)
            return httpx.Response(200, content=body, headers={"ETag": etag})
        if path in self.overrides:
            return httpx.Response(200, content=self.overrides[path])
        if path in self.details:
            return httpx.Response(200, content=self.details[path])
        return httpx.Response(404)


def run(db_path, server, **kwargs):
    settings = Settings(db_path=db_path, requests_per_second=0, max_retries=2, backoff_base_s=0.01)
    return ingest.refresh(settings, transport=httpx.MockTransport(server), sleep=lambda s: None, **kwargs)


def snapshot(db_path):
    return table(db_path, "SELECT * EXCLUDE (updated_at) FROM curated.scotus_cases ORDER BY case_id")


def test_clean_refresh_then_noop_refresh_downloads_only_the_list(db_path, samples_dir):
    server = OyezServerDouble(samples_dir)
    report = run(db_path, server)
    assert report.ok and report.counts["new"] == len(CASE_FILES)
    first = snapshot(db_path)
    server.requests.clear()
    again = run(db_path, server)
    assert server.requests == ["/cases"]                       # conditional GET on the list: 304
    assert again.ok and again.counts["changed"] == 0 and again.counts["new"] == 0
    assert snapshot(db_path) == first
    payloads = table(db_path, "SELECT count(*), count(DISTINCT (source, key, sha256)) FROM ops.raw_payloads")[0]
    assert payloads[0] == payloads[1] == len(CASE_FILES) + 1   # details + one list, no duplicates


def test_bad_inputs_are_retried_or_quarantined_and_the_rest_lands(db_path, samples_dir):
    server = OyezServerDouble(samples_dir)
    server.faults["/cases/1971/70-18"] = [httpx.Response(500)]
    server.faults["/cases/1962/155"] = [httpx.Response(429, headers={"Retry-After": "1"})]
    server.overrides["/cases/2015/14-1096"] = b'{"ID": 62321, "name": "Luna Torres v. Lyn'     # truncated
    server.overrides["/cases/1789-1850/none"] = b"<html>Service Unavailable</html>"             # not JSON
    nameless = json.loads(server.details["/cases/1789-1850/10us87"])
    nameless["name"] = None
    server.overrides["/cases/1789-1850/10us87"] = json.dumps(nameless).encode()                # no name
    report = run(db_path, server)
    loaded = {r[0] for r in table(db_path, "SELECT name FROM curated.scotus_cases")}
    assert "Roe v. Wade" in loaded and "Gideon v. Wainwright" in loaded                        # retried, landed
    assert len(loaded) == len(CASE_FILES) - 3
    reasons = dict(table(db_path, "SELECT source_key, reason FROM ops.quarantine"))
    assert "truncated JSON" in reasons["2015/14-1096"]
    assert "invalid or truncated JSON" in reasons["1789-1850/none"]
    assert "not_be_null on name" in reasons["62333"]
    assert not report.ok and report.counts["quarantined"] == 3 and len(report.failures) == 3


def test_killed_halfway_then_rerun_equals_one_clean_run(db_path, tmp_path, samples_dir, monkeypatch):
    clean_db = tmp_path / "clean.duckdb"
    run(clean_db, OyezServerDouble(samples_dir))
    server = OyezServerDouble(samples_dir)
    server.fail_after = 4                                   # the list and three details, then a kill
    monkeypatch.setattr(ingest, "BATCH_SIZE", 2)
    with pytest.raises(KeyboardInterrupt):
        run(db_path, server)
    assert 0 < table(db_path, "SELECT count(*) FROM curated.scotus_cases")[0][0] < len(CASE_FILES)
    server.fail_after = None
    report = run(db_path, server)
    assert report.ok
    assert snapshot(db_path) == snapshot(clean_db)


def test_changed_upstream_text_is_detected_and_updated(db_path, samples_dir):
    server = OyezServerDouble(samples_dir)
    run(db_path, server)
    roe = json.loads(server.details["/cases/1971/70-18"])
    roe["conclusion"] = "<p>A revised conclusion.</p>"
    roe["timeline"] = roe["timeline"] + [{"event": "Revised", "dates": [1]}]
    server.details["/cases/1971/70-18"] = json.dumps(roe).encode()
    for summary in server.summaries:
        if summary["ID"] == roe["ID"]:
            summary["timeline"] = roe["timeline"]
    report = run(db_path, server)
    assert report.counts["changed"] == 1 and report.counts["new"] == 0
    assert table(db_path, "SELECT conclusion FROM curated.scotus_cases WHERE case_id = 50606")[0][0] == \
        "A revised conclusion."
