"""The settings in one typed object (caseforge.settings): every variable a field read by pydantic-settings, loaded
once by whoever starts the work and handed down (the current settings), checked, and the settings file read only
when it changed."""
from __future__ import annotations

import pytest

from caseforge import settings_file
from caseforge.settings import (Settings, SettingsError, load_settings, overriding, read_settings, reload_settings,
                                using, variables_of)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CASEFORGE_CONFIG", raising=False)
    monkeypatch.delenv("CASEFORGE_LLM_CONFIG", raising=False)
    reload_settings()
    yield
    reload_settings()


def test_the_current_settings_are_handed_out_and_nothing_is_read_again(monkeypatch):
    first = read_settings()
    with using(first):
        monkeypatch.setenv("CASEFORGE_RPS", "0.5")           # changed under a running command: it keeps its own
        assert load_settings() is first and load_settings().requests_per_second == 2.0
        assert load_settings("other.duckdb").db_path.name == "other.duckdb"
    again = load_settings()                                 # nothing current: read now
    assert again is not first and again.requests_per_second == 0.5 and isinstance(again, Settings)


def test_every_variable_is_a_field_read_by_pydantic_settings(monkeypatch, tmp_path):
    """What llm/config.py, the backends, fan-out and the zombie automation once read from os.environ themselves."""
    values = {"CASEFORGE_LLM_CASEFACTS_FACTUALITY_MODEL": "m1", "CASEFORGE_LLM_VALIDATOR_BACKEND": "openai",
              "CASEFORGE_LLM_MODEL": "m3", "CASEFORGE_LLM_REFRESH": "1", "CASEFORGE_LLM_RETRY_FAILED": "no",
              "CASEFORGE_OPENAI_BASE_URL": "http://gpu:8000/v1", "CASEFORGE_OPENAI_API_KEY": "secret",
              "CASEFORGE_LLAMACPP_MODEL_PATH": "/m.gguf", "CASEFORGE_REPLAY_FILE": "r.jsonl",
              "CASEFORGE_FANOUT_STORE": "s3://b/p", "CASEFORGE_ZOMBIE_WINDOW_S": "120", "CASEFORGE_DENSE_MODEL": "d"}
    settings = Settings.of_environment(values)
    assert settings.llm_variable("CASEFACTS_FACTUALITY", "MODEL") == "m1"
    assert settings.llm_variable("VALIDATOR", "BACKEND") == "openai" and settings.llm_variable(None, "MODEL") == "m3"
    assert settings.llm_refresh is True and settings.retry_failed is False
    assert (settings.openai_base_url, settings.openai_api_key, settings.llamacpp_model_path, settings.replay_file,
            settings.fanout_store, settings.zombie_window_s, settings.embedding_model) == (
        "http://gpu:8000/v1", "secret", "/m.gguf", "r.jsonl", "s3://b/p", 120, "d")
    assert "secret" not in repr(settings)
    assert Settings.of_environment({"CASEFORGE_OPENAI_BASE_URL": ""}).openai_base_url == ""    # empty: unset
    assert variables_of("config_file") == ["CASEFORGE_CONFIG", "CASEFORGE_LLM_CONFIG"]
    (tmp_path / "other.toml").write_text("[fanout]\nshards = 5\n")
    assert Settings.of_environment({"CASEFORGE_LLM_CONFIG": "other.toml"}).file.fanout.shards == 5


def test_the_file_is_read_once_and_again_when_it_changes(tmp_path, monkeypatch):
    reads = []
    real = settings_file.tomllib.load
    monkeypatch.setattr(settings_file.tomllib, "load", lambda handle: reads.append(handle.name) or real(handle))
    (tmp_path / "caseforge.toml").write_text("[fanout]\nshards = 7\n")
    assert load_settings().file.fanout.shards == 7
    assert load_settings().file.fanout.shards == 7
    assert len(reads) == 2                          # the shipped defaults and the user's file, once each
    (tmp_path / "caseforge.toml").write_text("[fanout]\nshards = 9\n# longer\n")
    assert load_settings().file.fanout.shards == 9 and len(reads) == 3


def test_overrides_lay_over_the_file_for_what_runs_inside():
    flagged = read_settings().model_copy(update={"llm_refresh": True})      # a command's flag
    with using(flagged), overriding({"release": {"fresh_months": 3}}) as inside:
        assert load_settings() is inside and inside.file.release.fresh_months == 3
        assert inside.llm_refresh is True                                  # laid over the command's settings
    assert load_settings().file.release.fresh_months == 12


def test_a_value_of_the_wrong_kind_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("CASEFORGE_BUSY_WAIT_S", "soon")
    with pytest.raises(SettingsError, match="CASEFORGE_BUSY_WAIT_S: Input should be a valid number"):
        load_settings()
    monkeypatch.delenv("CASEFORGE_BUSY_WAIT_S")
    (tmp_path / "caseforge.toml").write_text("[fanout]\nshards = \"many\"\n")
    with pytest.raises(SettingsError, match=r"^settings file caseforge.toml: \[fanout\] shards: Input should be a "
                                            r"valid integer"):
        load_settings()


def test_a_key_no_table_declares_is_an_error_naming_it_its_file_and_the_closest_key(tmp_path):
    """Issue 37: `[llm] model` and `[llm.options]` of the documented example were ignored without a word."""
    (tmp_path / "caseforge.toml").write_text('[fanout]\nshard = 8\n[mine]\nx = 1\n[llm.options]\nbase_url = "u"\n'
                                             '[llm.roles.validatr]\nmodel = "m"\n')
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert sorted(raised.value.problems) == sorted([
        "settings file caseforge.toml: unknown setting [fanout] shard; did you mean shards?",
        "settings file caseforge.toml: unknown setting [mine] (known: fanout, llm, mirror, nightly, release, review, source_health, upstream)",
        "settings file caseforge.toml: unknown setting [llm] options; it belongs in [llm.backends.<name>] options",
        "settings file caseforge.toml: unknown setting [llm.roles] validatr; did you mean validator?"])


def test_a_run_override_with_an_unknown_key_says_so():
    with pytest.raises(SettingsError, match=r"^this run's settings \(overrides\): unknown setting \[fanout\] pol; "
                                            r"did you mean pool\?$"):
        with overriding({"fanout": {"pol": "gpu"}}):
            pass


def test_a_toml_date_is_the_text_it_stands_for(tmp_path):
    (tmp_path / "caseforge.toml").write_text("[release]\nfresh_after = 2024-06-30\n")
    assert load_settings().file.release.fresh_after == "2024-06-30"


def test_the_tables_name_the_backends_and_roles_there_are():
    from caseforge.llm.backends import REGISTRY
    from caseforge.llm.config import ROLE_FLAGS
    from caseforge.settings_tables import BACKENDS, ROLES

    assert set(BACKENDS) == set(REGISTRY) and set(ROLES) == set(ROLE_FLAGS)


def test_every_variable_is_documented():
    """docs/configuration.md (or another page of docs/, or README) names every variable a field of Settings is read
    from."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = "".join(page.read_text() for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))])
    variables = [v for name in Settings.model_fields for v in variables_of(name)]
    assert "CASEFORGE_LLM" in variables                     # the per-step and per-role ones, as the pages write them
    missing = [v for v in variables if v != "CASEFORGE_LLM" and v not in text]
    missing += [v for v in ("CASEFORGE_LLM_<STEP>_BACKEND", "CASEFORGE_LLM_<ROLE>_BACKEND") if v not in text]
    assert missing == []


def test_a_run_takes_its_limits_from_the_settings_it_was_handed_and_reads_none(tmp_path, monkeypatch):
    """The size checks of a run (caseforge.archive) use the settings its session was handed, not settings read again
    per payload: a limit only the handed settings have is the one applied, and nothing is read during the run."""
    import json

    from caseforge import settings as settings_module
    from caseforge.tasks.cn import ingest
    from caseforge.warehouse.connection import connect

    folder = tmp_path / "dumps"
    folder.mkdir()
    (folder / "a.jsonl").write_text("\n".join(json.dumps({"doc_id": f"g{i}", "full_text": "判决" * 200})
                                              for i in range(3)), encoding="utf-8")
    handed = read_settings().model_copy(update={"db_path": tmp_path / "cf.duckdb", "max_mb_cn_record": 0.0001})
    reads = []
    real = settings_module.read_settings
    monkeypatch.setattr(settings_module, "read_settings", lambda *a, **k: reads.append(a) or real(*a, **k))
    report = ingest.refresh(handed, from_dir=str(folder))
    assert reads == [] and report.counts.get("quarantined") == 3, (reads, report.counts)
    con = connect(handed.db_path)
    reasons = [r for (r,) in con.execute("SELECT reason FROM ops.quarantine").fetchall()]
    con.close()
    assert len(reasons) == 3 and all("over the cn record limit of 105 bytes" in r for r in reasons), reasons
