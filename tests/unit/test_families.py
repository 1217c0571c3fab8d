"""Model families: one function names them, one check keeps two roles apart."""
import pytest

from caseforge.families import SameFamily, check_families, family_of


@pytest.mark.parametrize("name, family", [
    ("Qwen/Qwen2.5-7B-Instruct", "qwen"), ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen"),
    ("meta-llama/Llama-3.1-70B-Instruct", "llama"), ("meta-llama/Meta-Llama-3-8B-Instruct", "llama"),
    ("google/gemma-3-27b-it", "gemma"), ("gemma-3-270m-it-Q4_K_M.gguf", "gemma"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistral"),
    ("smollm2-135m-instruct", "smollm"), ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "smollm"),
    ("SmolLM2-135M-Instruct.Q4_1.gguf", "smollm"),
    ("gpt-4o-mini", "gpt"), ("openai/gpt-oss-120b", "gpt"), ("microsoft/Phi-4-mini-instruct", "phi"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek"), ("Equall/Saul-7B-Instruct-v1", "saul"),
    ("something-else", None), ("double-aqeval-1", None), (None, None),
])
def test_family_of(name, family):
    assert family_of(name) == family


def test_same_family_is_refused_unless_allowed_and_unknown_is_a_warning():
    assert check_families("Qwen/Qwen3-8B", "google/gemma-3-27b-it") is None
    with pytest.raises(SameFamily, match="generator 'Qwen/Qwen3-8B' and validator 'qwen2.5-7b-instruct' are both qwen"):
        check_families("Qwen/Qwen3-8B", "qwen2.5-7b-instruct")
    assert "allowed by --allow-same-family" in check_families("Qwen/Qwen3-8B", "qwen2.5-7b", allow_same=True)
    with pytest.raises(SameFamily, match="judged model 'qwen2.5-7b' and judge 'Qwen2.5-72B-Instruct'"):
        check_families("qwen2.5-7b", "Qwen2.5-72B-Instruct", roles=("judged model", "judge"))
    assert "family unknown for judged model 'mystery-model'" in check_families(
        "mystery-model", "llama-3.3-70b", roles=("judged model", "judge"))
