"""Reading a model's JSON reply (caseforge.llm.parsing)."""
import pytest
from pydantic import BaseModel

from caseforge.llm.parsing import InvalidOutput, extract_json, parse_output


class Answer(BaseModel):
    answer: str


def test_a_raw_line_break_inside_a_string_is_read():
    # llama-cpp-python 0.3's grammar writes a string character as [^"\\], so a line break inside the
    # answer comes out raw: measured on `eval aquaechr --system rtg-vanilla` with SmolLM2, where the whole
    # 650-character answer was recorded as "no JSON object found".
    reply = '{ "answer": "The Court considers the complaint manifestly ill-founded.\nIt rejects it." } '
    assert parse_output(reply, Answer).answer == "The Court considers the complaint manifestly ill-founded.\nIt rejects it."
    assert extract_json('Sure:\n```json\n{"answer": "a\tb"}\n```') == {"answer": "a\tb"}


def test_a_reply_cut_inside_its_string_is_still_a_failure():
    with pytest.raises(InvalidOutput, match="no JSON object"):
        parse_output('{ "answer": "The Court considers the complaint', Answer)
