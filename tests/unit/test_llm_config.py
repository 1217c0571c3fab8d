"""Backend and model per role and step: arguments, environment, the settings file, the built-in defaults."""
import pytest

from caseforge.llm.config import Backends
from caseforge.llm.config import llm_choice as resolve
from caseforge.settings import load_settings, overriding


def llm_choice(*args, **kwargs):
    """The choice under the settings in force now (this test changes the environment and the file as it goes)."""
    return resolve(load_settings(), *args, **kwargs)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("CASEFORGE_LLM_BACKEND", "CASEFORGE_LLM_MODEL", "CASEFORGE_LLM_CONFIG", "CASEFORGE_CONFIG",
                 "CASEFORGE_REPLAY_FILE", "CASEFORGE_LLM_CASEFACTS_FACTUALITY_MODEL", "CASEFORGE_LLM_VALIDATOR_MODEL",
                 "CASEFORGE_LLM_RETRY_FAILED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_built_in_defaults_are_two_packaged_models_of_two_families():
    generator, validator = llm_choice(role="generator"), llm_choice(role="validator")
    assert (generator.backend, generator.model, generator.family) == ("llamacpp", "smollm2-135m-instruct", "smollm")
    assert (validator.backend, validator.model, validator.family) == ("llamacpp", "gemma-3-270m", "gemma")
    assert llm_choice(role="judge").family == llm_choice(role="nli").family == "gemma"
    assert llm_choice(role="system").model == "smollm2-135m-instruct"   # evaluated: the generator's model
    assert generator.options["n_ctx"] == 8192                            # [llm.backends.llamacpp.options]


def test_precedence_arguments_then_step_env_then_role_env_then_env_then_file(monkeypatch, tmp_path):
    (tmp_path / "caseforge.toml").write_text(
        '[llm]\nbackend = "openai"\n'
        '[llm.roles.generator]\nmodel = "Qwen/Qwen2.5-7B-Instruct"\noptions = {concurrency = 64}\n'
        '[llm.roles.validator]\nmodel = "google/gemma-3-27b-it"\n'
        '[llm.steps."casefacts.factuality"]\nmodel = "google/gemma-3-12b-it"\noptions = {concurrency = 8}\n'
        '[llm.steps."aquaechr-question-*"]\nmodel = "mistralai/Mistral-7B-Instruct-v0.3"\n')
    assert llm_choice("casefacts.generate").describe() == "openai:Qwen/Qwen2.5-7B-Instruct"
    factuality = llm_choice("casefacts.factuality", "validator")
    assert factuality.model == "google/gemma-3-12b-it" and factuality.options == {"concurrency": 8}
    assert llm_choice("casefacts.overruling", "validator").model == "google/gemma-3-27b-it"
    assert llm_choice("aquaechr-question-iv-c").model == "mistralai/Mistral-7B-Instruct-v0.3"    # a * key
    monkeypatch.setenv("CASEFORGE_LLM_MODEL", "microsoft/Phi-4-mini-instruct")
    assert llm_choice("casefacts.generate").model == "microsoft/Phi-4-mini-instruct"
    monkeypatch.setenv("CASEFORGE_LLM_VALIDATOR_MODEL", "google/gemma-3-4b-it")
    assert llm_choice("casefacts.overruling", "validator").model == "google/gemma-3-4b-it"
    monkeypatch.setenv("CASEFORGE_LLM_CASEFACTS_FACTUALITY_MODEL", "meta-llama/Llama-3.1-8B-Instruct")
    assert llm_choice("casefacts.factuality", "validator").model == "meta-llama/Llama-3.1-8B-Instruct"
    assert llm_choice("casefacts.factuality", "validator", model="gpt-4o-mini").model == "gpt-4o-mini"


def test_unknown_backend_role_and_missing_model_are_clear_errors():
    with pytest.raises(ValueError, match="unknown LLM backend 'gpt'"):
        llm_choice(backend="gpt")
    with pytest.raises(ValueError, match="unknown LLM role 'critic'"):
        llm_choice(role="critic")
    with pytest.raises(ValueError, match=r"no model configured for the openai backend \(role validator\)"):
        llm_choice(role="validator", backend="openai")


def test_a_run_can_lay_settings_over_the_file(tmp_path):
    (tmp_path / "caseforge.toml").write_text('[nightly.builders.casefacts]\nlimit = 10\n')
    assert load_settings().file.nightly.builders["casefacts"]["limit"] == 10
    with overriding({"nightly": {"builders": {"casefacts": {"limit": 2}}},
                                   "llm": {"roles": {"judge": {"model": "gemma-3-270m-it"}}}}):
        assert load_settings().file.nightly.builders["casefacts"]["limit"] == 2
        assert llm_choice(role="judge").model == "gemma-3-270m-it"
    assert load_settings().file.nightly.builders["casefacts"]["limit"] == 10


def test_a_named_settings_file_that_is_missing_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CASEFORGE_CONFIG", str(tmp_path / "nowhere.toml"))
    with pytest.raises(FileNotFoundError, match="settings file not found"):
        llm_choice()


def test_backends_use_doubles_for_their_roles_and_the_settings_for_the_rest():
    class JudgeDouble:
        name, model = "double", "double-judge"

    backends = Backends(fixed={"judge": JudgeDouble()})
    assert backends.for_step("aquaechr-judge", "judge").model == "double-judge"
    assert backends.model("generator", "aquaechr-question-i") == "smollm2-135m-instruct"


def test_llm_model_names_the_model_of_every_role_below_roles_and_steps(tmp_path):
    (tmp_path / "caseforge.toml").write_text(
        '[llm]\nbackend = "openai"\nmodel = "Qwen/Qwen2.5-7B-Instruct"\n'
        '[llm.roles.validator]\nmodel = "google/gemma-3-27b-it"\n')
    for role in ("generator", "judge", "nli", "system"):
        assert llm_choice("casefacts.generate", role).describe() == "openai:Qwen/Qwen2.5-7B-Instruct"
    assert llm_choice("casefacts.factuality", "validator").model == "google/gemma-3-27b-it"


def test_a_role_without_a_model_names_the_flag_of_that_role(tmp_path):
    (tmp_path / "caseforge.toml").write_text('[llm]\nbackend = "openai"\n[llm.roles.generator]\nmodel = "q"\n')
    with pytest.raises(ValueError, match=r"role validator\): pass --validator-model, set CASEFORGE_LLM_VALIDATOR_MODEL"):
        llm_choice("casefacts.factuality", "validator")
    with pytest.raises(ValueError, match=r"role judge\): pass --judge-model"):
        llm_choice("aquaechr-judge", "judge")
