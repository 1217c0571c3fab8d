"""The per-host global concurrency limits deployments/setup.sh creates (upstream-<host>) are held by the fetch
layer: inside a Prefect run against a server, a fetcher takes one slot of its host's limit at its first
request and gives it back when it closes. Loopback Prefect server and a loopback HTTP server."""
import threading
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from caseforge.archive import RawArchive
from caseforge.fetch import Fetcher
from caseforge.settings import Settings
from caseforge.warehouse.connection import connect

pytestmark = [pytest.mark.slow]


class Answer(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_fetcher_holds_its_hosts_slot_while_it_is_open(prefect_server, upstream, tmp_path):
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from caseforge.flows.wiring import install

    install()                       # the Prefect host slots, as a command's flows get them

    name = "upstream-127.0.0.1"

    def active() -> int:
        with get_client(sync_client=True) as client:
            return client.read_global_concurrency_limit_by_name(name).active_slots

    @flow(name="host-slot-test")
    def fetch_twice(db: str) -> dict:
        seen = {}
        with Fetcher(Settings(db_path=Path(db), requests_per_second=0),
                     RawArchive(connect(db))) as fetcher:
            fetcher.allow("oyez", upstream)
            seen["before_first_request"] = active()
            fetcher.get("oyez", "a", f"{upstream}/a", kind="case")
            seen["after_one_request"] = active()
            fetcher.get("oyez", "b", f"{upstream}/b", kind="case")
            seen["after_two_requests"] = active()
        seen["after_close"] = active()
        return seen

    with temporary_settings({PREFECT_API_URL: f"{prefect_server.url}/api"}):
        with get_client(sync_client=True) as client:
            client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
        try:
            seen = fetch_twice(str(tmp_path / "cf.duckdb"))
            outside = {}
            with Fetcher(Settings(db_path=tmp_path / "cf2.duckdb", requests_per_second=0),
                         RawArchive(connect(tmp_path / "cf2.duckdb"))) as fetcher:
                fetcher.allow("oyez", upstream)
                fetcher.get("oyez", "a", f"{upstream}/a", kind="case")
                outside["outside_a_run"] = active()
        finally:
            with get_client(sync_client=True) as client:
                client.delete_global_concurrency_limit_by_name(name)
    assert seen == {"before_first_request": 0, "after_one_request": 1, "after_two_requests": 1, "after_close": 0}
    assert outside == {"outside_a_run": 0}

