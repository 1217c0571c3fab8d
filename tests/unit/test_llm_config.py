"""Backend/model choice from arguments, environment and TOML; model families."""
import pytest

from caseforge.llm.config import llm_choice


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("CASEFORGE_LLM_BACKEND", "CASEFORGE_LLM_MODEL", "CASEFORGE_LLM_CONFIG", "CASEFORGE_REPLAY_FILE",
                 "CASEFORGE_LLM_CASEFACTS_VALIDATE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_defaults_to_smollm2_on_llamacpp():
    choice = llm_choice()
    assert (choice.backend, choice.model, choice.family) == ("llamacpp", "smollm2-135m-instruct", "smollm")


def test_precedence_arguments_then_step_env_then_env_then_toml(monkeypatch, tmp_path):
    (tmp_path / "caseforge.toml").write_text(
        '[llm]\nbackend = "openai"\nmodel = "Qwen/Qwen2.5-7B-Instruct"\n'
        '[llm.options]\nconcurrency = 64\n'
        '[llm.steps."casefacts/validate"]\nmodel = "google/gemma-3-12b-it"\noptions = {concurrency = 8}\n')
    assert llm_choice("casefacts/generate").describe() == "openai:Qwen/Qwen2.5-7B-Instruct"
    validate = llm_choice("casefacts/validate")
    assert validate.model == "google/gemma-3-12b-it" and validate.options == {"concurrency": 8}
    monkeypatch.setenv("CASEFORGE_LLM_MODEL", "mistralai/Mistral-7B-Instruct-v0.3")
    assert llm_choice("casefacts/generate").model == "mistralai/Mistral-7B-Instruct-v0.3"
    monkeypatch.setenv("CASEFORGE_LLM_CASEFACTS_VALIDATE_MODEL", "meta-llama/Llama-3.1-8B-Instruct")
    assert llm_choice("casefacts/validate").model == "meta-llama/Llama-3.1-8B-Instruct"
    assert llm_choice("casefacts/validate", model="gpt-4o-mini").model == "gpt-4o-mini"


def test_unknown_backend_and_missing_model_are_clear_errors():
    with pytest.raises(ValueError, match="unknown LLM backend 'gpt'"):
        llm_choice(backend="gpt")
    with pytest.raises(ValueError, match="no model configured for the openai backend"):
        llm_choice(backend="openai")


