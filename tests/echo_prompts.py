"""The echo prompt (tests/fixtures/prompts/echo.j2) as LLM requests, shared by the LLM layer's tests."""
from pathlib import Path

from pydantic import BaseModel

from caseforge.llm import LLMRequest, SamplingParams, render

PROMPTS = Path(__file__).resolve().parent / "fixtures" / "prompts"


class Number(BaseModel):
    value: int


def requests_for(numbers, params: SamplingParams | None = None) -> list[LLMRequest]:
    """One request per number, keyed "n<number>", asking the model to echo it."""
    result = []
    for n in numbers:
        prompt = render("echo.j2", root=PROMPTS, n=n)
        result.append(LLMRequest(key=f"n{n}", messages=prompt.messages, params=params or SamplingParams(),
                                 template_id=prompt.template_id, template_sha=prompt.template_sha))
    return result
