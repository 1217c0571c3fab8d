"""The document-endpoint client, against httpx.MockTransport doubles only."""
import json
from pathlib import Path

import httpx
import pytest

from caseforge.archive import RawArchive
from caseforge.fetch import Fetcher, FetchError
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.tasks.cn import ingest
from caseforge.tasks.cn.api import WenshuApiError, WenshuClient, WenshuCredentials, parse_document_response
from caseforge.warehouse.connection import connect

DOC = (Path(__file__).resolve().parent.parent / "fixtures" / "cn_civil_judgment.txt").read_text(encoding="utf-8")
RECORD = {"s1": "张三与李四民间借贷纠纷一审民事判决书", "s2": "北京市海淀区人民法院", "s5": "abc123",
          "s6": "01", "s7": "（2019）京0108民初123号", "s8": "民事案件", "s9": "民事一审", "s31": "2019-03-05",
          "s11": ["民间借贷纠纷"], "qwContent": "<div>" + DOC.replace("\n", "</div><div>") + "</div>"}


def scripted_server(responses: list, seen: list):
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status, body = responses.pop(0)
        return httpx.Response(status, content=body if isinstance(body, bytes) else json.dumps(body).encode())
    return httpx.MockTransport(handler)


@pytest.fixture
def con(db_path):
    connection = connect(db_path)
    yield connection
    connection.close()


def _client(con, db_path, responses, seen, token="tok"):
    fetcher = Fetcher(load_settings(str(db_path)), RawArchive(con), transport=scripted_server(responses, seen),
                      sleep=lambda s: None)
    return WenshuClient(fetcher, WenshuCredentials("SESSION=s1", token, "https://example.test/doc"))


def test_credentials_come_from_the_environment_and_are_required():
    with pytest.raises(WenshuApiError, match="CASEFORGE_WENSHU_COOKIES"):
        WenshuCredentials.from_env({})
    creds = WenshuCredentials.from_env({"CASEFORGE_WENSHU_COOKIES": "a=b", "CASEFORGE_WENSHU_TOKEN": "t"})
    assert (creds.cookies, creds.token) == ("a=b", "t")


def test_fetch_sends_session_and_parses_an_enveloped_record(con, db_path):
    seen = []
    client = _client(con, db_path, [(503, b"busy"), (200, {"code": 1, "result": RECORD})], seen)
    record, payload = client.fetch_document("abc123")
    assert record.doc_id == "abc123" and record.source_format == "wenshu_api"
    assert seen[-1].headers["Cookie"] == "SESSION=s1"
    assert seen[-1].url.params["docId"] == "abc123" and seen[-1].url.params["__RequestVerificationToken"] == "tok"
    assert len(seen) == 2  # the 503 was retried
    assert RawArchive(con).latest("cn", "doc/abc123").sha256 == payload.sha256


def test_encrypted_or_failed_answers_are_clear_errors():
    with pytest.raises(WenshuApiError, match="encrypted"):
        parse_document_response("x", json.dumps({"code": 1, "result": "U2FsdGVkX1+abc"}).encode())
    with pytest.raises(WenshuApiError, match="code=9"):
        parse_document_response("x", json.dumps({"code": 9, "description": "login required", "result": None}).encode())
    with pytest.raises(WenshuApiError, match="not JSON"):
        parse_document_response("x", b"<html>login</html>")


def test_failures_are_quarantined_and_the_rest_is_loaded(con, db_path):
    seen = []
    responses = [(403, b"forbidden"), (200, {"code": 1, "result": "encrypted"}), (200, RECORD)]
    client = _client(con, db_path, responses, seen)
    report = StageReport("t")
    fetched = ingest.fetch_documents(client, con, 1, ["d1", "d2", "abc123"], report)
    assert [r.doc_id for r, _ in fetched] == ["abc123"]
    reasons = dict(con.execute("SELECT source_key, reason FROM ops.quarantine ORDER BY source_key").fetchall())
    assert reasons["doc/d1"] == "HTTP 403" and "encrypted" in reasons["doc/d2"]
    frame = ingest.parse_batch(con, 1, fetched, report)
    ingest.load_judgments(con, 1, frame, report)
    row = con.execute("SELECT case_no, cause, complete, judgment_date FROM curated.cn_judgments").fetchone()
    assert row[:3] == ("（2019）京0108民初123号", "民间借贷纠纷", True) and str(row[3]) == "2019-03-05"


def test_http_error_raises_fetch_error(con, db_path):
    client = _client(con, db_path, [(404, b"")], [])
    with pytest.raises(FetchError):
        client.fetch_document("missing")
