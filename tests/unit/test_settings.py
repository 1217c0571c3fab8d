"""The settings in one typed object (caseforge.settings): loaded once, loaded again when what they depend on
changes, checked, and the settings file read only when it changed."""
from __future__ import annotations

import pytest

from caseforge import settings as settings_module
from caseforge.settings import Settings, SettingsError, load_settings, overriding, reload_settings, table


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CASEFORGE_CONFIG", raising=False)
    monkeypatch.delenv("CASEFORGE_LLM_CONFIG", raising=False)
    reload_settings()
    yield
    reload_settings()


def test_the_same_object_until_the_environment_changes(monkeypatch):
    first = load_settings()
    assert load_settings() is first
    monkeypatch.setenv("CASEFORGE_RPS", "0.5")
    again = load_settings()
    assert again is not first and again.requests_per_second == 0.5 and isinstance(again, Settings)
    monkeypatch.delenv("CASEFORGE_RPS")
    assert load_settings().requests_per_second == 2.0


def test_the_file_is_read_once_and_again_when_it_changes(tmp_path, monkeypatch):
    reads = []
    real = settings_module.tomllib.load
    monkeypatch.setattr(settings_module.tomllib, "load", lambda handle: reads.append(handle.name) or real(handle))
    (tmp_path / "caseforge.toml").write_text("[fanout]\nshards = 7\n")
    assert load_settings().file.fanout.shards == 7 and table("fanout")["shards"] == 7
    assert load_settings().file.fanout.shards == 7
    assert len(reads) == 2                          # the shipped defaults and the user's file, once each
    (tmp_path / "caseforge.toml").write_text("[fanout]\nshards = 9\n# longer\n")
    assert load_settings().file.fanout.shards == 9 and len(reads) == 3


def test_overrides_lay_over_the_file_for_what_runs_inside():
    with overriding({"release": {"fresh_months": 3}}):
        assert load_settings().file.release.fresh_months == 3
    assert load_settings().file.release.fresh_months == 12


def test_a_value_of_the_wrong_kind_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("CASEFORGE_BUSY_WAIT_S", "soon")
    with pytest.raises(SettingsError, match="CASEFORGE_BUSY_WAIT_S: Input should be a valid number"):
        load_settings()
    monkeypatch.delenv("CASEFORGE_BUSY_WAIT_S")
    (tmp_path / "caseforge.toml").write_text("[fanout]\nshards = \"many\"\n")
    with pytest.raises(SettingsError, match=r"settings file \[fanout\] shards"):
        load_settings()


def test_a_key_no_table_declares_is_an_error_naming_it_its_file_and_the_closest_key(tmp_path):
    """Issue 37: `[llm] model` and `[llm.options]` of the documented example were ignored without a word."""
    (tmp_path / "caseforge.toml").write_text('[fanout]\nshard = 8\n[mine]\nx = 1\n[llm.options]\nbase_url = "u"\n'
                                             '[llm.roles.validatr]\nmodel = "m"\n')
    with pytest.raises(SettingsError) as raised:
        table("fanout")
    assert sorted(raised.value.problems) == sorted([
        "settings file caseforge.toml: unknown setting [fanout] shard; did you mean shards?",
        "settings file caseforge.toml: unknown setting [mine] (known: fanout, llm, mirror, nightly, release, source_health, upstream)",
        "settings file caseforge.toml: unknown setting [llm] options; it belongs in [llm.backends.<name>] options",
        "settings file caseforge.toml: unknown setting [llm.roles] validatr; did you mean validator?"])


def test_a_run_override_with_an_unknown_key_says_so():
    with overriding({"fanout": {"pol": "gpu"}}):
        with pytest.raises(SettingsError, match=r"^this run's settings \(overrides\): unknown setting \[fanout\] pol; "
                                                r"did you mean pool\?$"):
            load_settings()


def test_a_toml_date_is_the_text_it_stands_for(tmp_path):
    (tmp_path / "caseforge.toml").write_text("[release]\nfresh_after = 2024-06-30\n")
    assert load_settings().file.release.fresh_after == "2024-06-30"


def test_the_tables_name_the_backends_and_roles_there_are():
    from caseforge.llm.backends import REGISTRY
    from caseforge.llm.config import ROLE_FLAGS
    from caseforge.settings_tables import BACKENDS, ROLES

    assert set(BACKENDS) == set(REGISTRY) and set(ROLES) == set(ROLE_FLAGS)
