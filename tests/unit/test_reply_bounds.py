"""Every reply schema bounds its strings and lists so the longest reply fits in the step's max_tokens.

Measured with the default models: all 8 `barexam-case-advocate-round1` requests failed because SmolLM2,
held to the schema by llama.cpp's grammar, wrote "1.1.1.1…" inside the unbounded `queries` string until
max_tokens cut the JSON. A schema with no bound is now refused before any call."""
import importlib
import inspect
import pkgutil

import pytest
from pydantic import BaseModel, Field

from caseforge.llm import LLMRequest, SamplingParams, run_job
from caseforge.llm.reply_bounds import INTEGER_CHARS, UnboundedReply, longest_reply, text
from caseforge.tasks.case.method import QUERY_PARAMS, QueryProposal
from caseforge.warehouse.connection import connect


class CountingBackendDouble:
    """Test double for a model: counts the requests it is asked."""

    name = "counting-double"
    model = "double-model"
    batch_size = 4

    def __init__(self):
        self.asked = []

    def complete_batch(self, requests):
        self.asked += [r.key for r in requests]
        raise AssertionError("no request may reach the model")


class Unbounded(BaseModel):
    queries: list[str]


class Bounded(BaseModel):
    queries: list[text(10)] = Field(max_length=2)
    done: bool
    count: int


def test_longest_reply_counts_every_bounded_field():
    # {"queries":["xxxxxxxxxx","xxxxxxxxxx"],"done":false,"count":<17 chars>}
    expected = len('{"queries":[' + '"' + "x" * 10 + '",' + '"' + "x" * 10 + '"],"done":false,"count":}') + INTEGER_CHARS
    assert abs(longest_reply(Bounded.model_json_schema()) - expected) <= 3     # trailing separators
    assert longest_reply({"enum": ["SUPPORTED", "REFUTED"]}) == len('"SUPPORTED"')


@pytest.mark.parametrize("schema, where", [
    (Unbounded.model_json_schema(), "reply.queries[]"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}, "reply.a"),
    ({"type": "object", "additionalProperties": True}, "reply"),
])
def test_unbounded_schemas_name_the_field(schema, where):
    with pytest.raises(UnboundedReply, match=f"^{where.replace('[', '.').replace(']', '.')}"):
        longest_reply(schema)


def test_the_case_advocate_reply_fits_its_max_tokens():
    assert longest_reply(QueryProposal.model_json_schema()) <= QUERY_PARAMS.max_tokens


def test_run_job_refuses_an_unbounded_schema_before_any_call(tmp_path):
    backend = CountingBackendDouble()
    con = connect(tmp_path / "w.duckdb")
    request = LLMRequest(key="k", messages=[{"role": "user", "content": "q"}],
                         params=SamplingParams(max_tokens=200), template_id="t", template_sha="0")
    with pytest.raises(ValueError, match="unbounded .*reply.queries"):
        run_job(con, "step", backend, [request], Unbounded)
    with pytest.raises(ValueError, match="admits .* characters but max_tokens is 20"):
        run_job(con, "step", backend, [request.model_copy(update={"params": SamplingParams(max_tokens=20)})], Bounded)
    assert backend.asked == []


def _output_models():
    import caseforge.tasks as tasks
    for info in pkgutil.walk_packages(tasks.__path__, "caseforge.tasks."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseModel) and value.__module__ == module.__name__:
                yield f"{module.__name__}.{name}", value


@pytest.mark.parametrize("name, model", sorted(_output_models(), key=lambda nm: nm[0]), ids=lambda v: v if isinstance(v, str) else "")
def test_every_reply_model_of_the_pipelines_is_bounded(name, model):
    assert longest_reply(model.model_json_schema()) > 0
