"""Client for China Judgments Online's document endpoint, for users with their own login.

The site needs a logged-in session and anti-bot tokens, which this project never obtains by
itself. A user who has them supplies them through the environment:

- CASEFORGE_WENSHU_COOKIES — the Cookie header of a logged-in browser session
  (e.g. "SESSION=...; HOLDONKEY=...");
- CASEFORGE_WENSHU_TOKEN — the request verification token sent with each call (optional);
- CASEFORGE_WENSHU_DOC_URL — the document endpoint (default DEFAULT_DOC_URL); it must answer a
  GET with `docId` (and the token, when given) by the document's JSON: either the record itself
  (s1, s2, s5, s7, … qwContent) or an envelope {"code": 1, "result": {…record…}}.

The site's own browser API answers with an encrypted `result` string; decrypting it is not
implemented here — such an answer raises WenshuApiError saying so, and the payload stays in the
archive. Every response goes through caseforge.fetch.Fetcher (rate limit, retries, archive).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

from caseforge.archive import size_problem
from caseforge.fetch import Fetcher
from caseforge.settings import Settings, load_settings
from caseforge.tasks.cn.records import JudgmentRecord, record_from_dict
from caseforge.tasks.cn.text import decode_bytes

SOURCE = "cn"
DEFAULT_DOC_URL = "https://wenshu.court.gov.cn/website/parse/rest.q4w"
DOC_CFG = "com.lawyee.judge.dc.parse.dto.SearchDataDsoDTO@docInfoSearch"


class WenshuApiError(RuntimeError):
    """The endpoint answered, but not with a usable document."""


@dataclass(frozen=True)
class WenshuCredentials:
    cookies: str
    token: str | None = None
    doc_url: str = DEFAULT_DOC_URL

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "WenshuCredentials":
        """From the settings (CASEFORGE_WENSHU_*), or as they would be in the environment `env`."""
        settings = load_settings() if env is None else Settings.of_environment(env)
        cookies = settings.wenshu_cookies.strip()
        if not cookies:
            raise WenshuApiError("CASEFORGE_WENSHU_COOKIES is not set: the document endpoint needs the "
                                 "cookies of your own logged-in session")
        return cls(cookies, settings.wenshu_token or None, settings.wenshu_doc_url or DEFAULT_DOC_URL)


def document_key(doc_id: str) -> str:
    return f"doc/{doc_id}"


def parse_document_response(doc_id: str, body: bytes) -> JudgmentRecord:
    """The record an answer of the document endpoint holds; WenshuApiError (or RecordError) saying why not."""
    too_big = size_problem(SOURCE, "dump", len(body))
    if too_big:
        raise WenshuApiError(f"document {doc_id}: {too_big}")
    try:
        data = json.loads(decode_bytes(body))
    except ValueError as exc:
        raise WenshuApiError(f"document {doc_id}: response is not JSON ({exc})") from exc
    except RecursionError:
        raise WenshuApiError(f"document {doc_id}: response is JSON nested too deeply to read") from None
    if isinstance(data, dict) and "result" in data and not any(k.startswith("s") and k[1:].isdigit() for k in data):
        if data.get("code") not in (None, 1, "1", 200, "200"):
            raise WenshuApiError(f"document {doc_id}: endpoint said code={data.get('code')}: "
                                 f"{data.get('description') or data.get('message') or ''}".rstrip(": "))
        data = data["result"]
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except (ValueError, RecursionError):
                raise WenshuApiError(f"document {doc_id}: the result is encrypted; decryption is not "
                                     "implemented (use a decrypting export or bulk dumps)") from None
    if not isinstance(data, dict):
        raise WenshuApiError(f"document {doc_id}: unexpected JSON {type(data).__name__}")
    record = record_from_dict(data)
    if record.doc_id != doc_id and data.get("s5"):
        raise WenshuApiError(f"document {doc_id}: endpoint returned document {record.doc_id}")
    return record


class WenshuClient:
    """Fetch single documents by id with the user's own session."""

    def __init__(self, fetcher: Fetcher, credentials: WenshuCredentials):
        self.fetcher = fetcher
        self.credentials = credentials
        fetcher.client.headers["Cookie"] = credentials.cookies
        fetcher.allow(SOURCE, credentials.doc_url)

    def fetch_document(self, doc_id: str) -> tuple[JudgmentRecord, object]:
        """(record, archived payload); raises FetchError (HTTP) or WenshuApiError (content)."""
        params = {"docId": doc_id, "cfg": DOC_CFG}
        if self.credentials.token:
            params["__RequestVerificationToken"] = self.credentials.token
        result = self.fetcher.get(SOURCE, document_key(doc_id), self.credentials.doc_url, params=params,
                                  conditional=False, kind="dump")
        return parse_document_response(doc_id, result.payload.body), result.payload
