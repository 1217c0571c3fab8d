"""The LLM layer: one interface over vLLM, OpenAI-compatible servers, llama.cpp and replay."""
from caseforge.llm.backends import Backend, get_backend
from caseforge.llm.jobs import run_job
from caseforge.llm.prompts import RenderedPrompt, render
from caseforge.llm.types import Completion, Failure, FreeText, JobResult, LLMRequest, SamplingParams


def request_from_template(key: str, template: str, params: SamplingParams | None = None, **variables) -> LLMRequest:
    """Render prompts/<template> and wrap it as a request."""
    prompt = render(template, **variables)
    return LLMRequest(key=key, messages=prompt.messages, params=params or SamplingParams(),
                      template_id=prompt.template_id, template_sha=prompt.template_sha)


__all__ = [
    "Backend", "Completion", "Failure", "FreeText", "JobResult", "LLMRequest", "RenderedPrompt", "SamplingParams",
    "get_backend", "render", "request_from_template", "run_job",
]
