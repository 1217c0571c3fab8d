"""caseforge.store against a real S3-compatible server (SeaweedFS on loopback, tests/s3_server.py) and the local
disk: the same API both ways, and a bad store refused in one line before any work, within a bounded time."""
import socket
import threading
import time
import uuid

import pytest

from caseforge.store import StoreError, is_loopback_url, open_store


def exercise(store):
    store.put("a/one.json", b"1")
    store.put("a/b/two.json", b"22")
    store.put("a/one.json", b"111")                      # replaced whole
    assert store.get("a/one.json") == b"111"
    assert store.exists("a/b/two.json") and not store.exists("a/none.json")
    assert store.list("a/") == ["a/b/two.json", "a/one.json"] == store.list("a")
    assert store.child("a").list() == ["b/two.json", "one.json"]
    assert store.child("a").get("b/two.json") == b"22"
    with pytest.raises(FileNotFoundError):
        store.get("a/none.json")
    store.delete("a/one.json")
    store.delete("a/one.json")                           # absent: fine
    assert store.list() == ["a/b/two.json"]
    store.delete_all("a")
    assert store.list() == [] and store.list("nothing/") == []


def test_a_local_folder_and_a_file_url_are_stores(tmp_path):
    exercise(open_store(tmp_path / "plain"))
    exercise(open_store(f"file://{tmp_path / 'url'}"))
    store = open_store(tmp_path / "check")
    store.check()
    assert store.list() == []


def test_an_s3_bucket_on_a_real_server_is_a_store(s3_env):
    store = open_store(f"s3://{s3_env.bucket}/store-test-{uuid.uuid4().hex[:8]}")
    assert store.endpoint_url == s3_env.endpoint_url        # from AWS_ENDPOINT_URL_S3
    store.check()
    exercise(store)


def test_the_read_only_identity_reads_but_cannot_write(s3_server, monkeypatch):
    prefix = f"ro-test-{uuid.uuid4().hex[:8]}"
    s3_server.filesystem().pipe(f"{s3_server.bucket}/{prefix}/x.json", b"x")
    for name, value in s3_server.env(s3_server.ro).items():
        monkeypatch.setenv(name, value)
    store = open_store(f"s3://{s3_server.bucket}/{prefix}")
    assert store.get("x.json") == b"x" and store.list() == ["x.json"]
    store.check(write=False)
    with pytest.raises(StoreError, match=r"^store s3://caseforge-test/ro-test-\w+ \(endpoint .*\): access denied"):
        store.check()


def one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_wrong_credentials_are_named_with_the_fix(s3_env, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    started = time.monotonic()
    with pytest.raises(StoreError) as exc:
        open_store(f"s3://{s3_env.bucket}/x").check()
    message = one_line(exc)
    assert message.startswith(f"store s3://{s3_env.bucket}/x (endpoint {s3_env.endpoint_url}): the credentials were "
                              "refused"), message
    assert "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in message and "not-the-secret" not in message
    assert time.monotonic() - started < 60


def test_a_missing_bucket_is_named_with_the_fix(s3_env):
    started = time.monotonic()
    with pytest.raises(StoreError) as exc:
        open_store("s3://no-such-bucket/shards").check()
    assert one_line(exc) == (f"store s3://no-such-bucket/shards (endpoint {s3_env.endpoint_url}): bucket "
                             "'no-such-bucket' does not exist there: create it, or fix the store URL")
    assert time.monotonic() - started < 60


def test_an_endpoint_that_refuses_connections_is_named_within_a_minute(s3_env):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]                      # closed again: nothing listens there
    started = time.monotonic()
    with pytest.raises(StoreError) as exc:
        open_store(f"s3://{s3_env.bucket}/x", endpoint_url=f"http://127.0.0.1:{port}").check()
    message = one_line(exc)
    assert message.startswith(f"store s3://{s3_env.bucket}/x (endpoint http://127.0.0.1:{port}): cannot reach the "
                              "endpoint"), message
    assert "check the endpoint URL" in message
    assert time.monotonic() - started < 60


def test_an_endpoint_that_never_answers_is_given_up_within_the_bound(s3_env):
    """A loopback server that accepts connections and says nothing (a firewall that drops, a hung proxy)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        with pytest.raises(StoreError) as exc:
            open_store(f"s3://{s3_env.bucket}/x", endpoint_url=f"http://127.0.0.1:{listener.getsockname()[1]}",
                       read_timeout_s=2).check(timeout_s=20)
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join(2)
        for sock in held:
            sock.close()
        listener.close()
    message = one_line(exc)
    assert "cannot reach the endpoint" in message or "no answer within 20 s" in message, message
    assert took < 25


def test_unknown_schemes_and_missing_extras_are_one_line():
    with pytest.raises(StoreError, match=r"^store ftp://x/y: unknown scheme 'ftp'"):
        open_store("ftp://x/y")
    with pytest.raises(StoreError, match="no store given"):
        open_store("  ")
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        with pytest.raises(StoreError, match=r"^store gs://b/p: gs:// needs gcsfs: pip install -e \.\[gcs\]$"):
            open_store("gs://b/p")


def test_loopback_urls_are_recognised():
    assert is_loopback_url("http://127.0.0.1:8000/v1") and is_loopback_url("http://localhost:1/v1")
    assert is_loopback_url("http://[::1]:8000/v1")
    assert not is_loopback_url("http://gpu-7.internal:8000/v1") and not is_loopback_url(None)
