"""How long a reply a JSON schema admits, so that a step whose schema lets the model write past
max_tokens is refused before any call.

Constrained decoding (llama.cpp's grammar, vLLM's guided decoding) keeps the model inside the schema but
not inside max_tokens: a small model that loops inside an unbounded string ("1.1.1.1…") runs to the
limit, and the cut reply is not JSON. Bounding every string (maxLength) and list (maxItems) closes that,
and `longest_reply` checks it: the longest compact JSON the schema admits, in characters. One token
covers at least one character of Latin text in the byte-level tokenizers these models use, so a schema
whose longest reply fits in max_tokens characters cannot be cut.
"""
from __future__ import annotations

import json
from typing import Annotated

from pydantic import StringConstraints

# llama.cpp's grammar writes an integer as at most 16 digits, a number with up to 16 more after the point
# and an exponent (json_schema_to_grammar's integral-part / decimal-part rules).
INTEGER_CHARS = 17
NUMBER_CHARS = 17 + 1 + 16 + 1 + 1 + 16


class UnboundedReply(ValueError):
    """The schema admits replies of any length: a string without maxLength or a list without maxItems."""


def longest_reply(schema: dict) -> int:
    """Characters of the longest compact JSON value `schema` admits; UnboundedReply naming the field
    that has no bound."""
    return _longest(schema, schema.get("$defs", {}), "reply")


def _longest(node: dict, defs: dict, where: str) -> int:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return _longest(defs[name], defs, where)
    if "enum" in node:
        return max(len(json.dumps(v, ensure_ascii=False)) for v in node["enum"])
    if "const" in node:
        return len(json.dumps(node["const"], ensure_ascii=False))
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max(_longest(branch, defs, where) for branch in node[key])
    if "allOf" in node and len(node["allOf"]) == 1:
        return _longest(node["allOf"][0], defs, where)
    kind = node.get("type")
    if isinstance(kind, list):
        return max(_longest({**node, "type": k}, defs, where) for k in kind)
    if kind == "string":
        if "maxLength" not in node:
            raise UnboundedReply(f"{where}: a string without maxLength")
        return node["maxLength"] + 2
    if kind == "integer":
        return INTEGER_CHARS
    if kind == "number":
        return NUMBER_CHARS
    if kind == "boolean":
        return 5
    if kind == "null":
        return 4
    if kind == "array":
        if "maxItems" not in node:
            raise UnboundedReply(f"{where}: a list without maxItems")
        items = node["maxItems"]
        return 2 + items * (_longest(node.get("items", {}), defs, f"{where}[]") + 1)
    if kind == "object":
        properties = node.get("properties", {})
        if node.get("additionalProperties") not in (None, False) or not properties:
            raise UnboundedReply(f"{where}: an object with free-form properties")
        return 2 + sum(len(json.dumps(name)) + 1 + _longest(sub, defs, f"{where}.{name}") + 1
                       for name, sub in properties.items())
    raise UnboundedReply(f"{where}: a value of no stated type")


def text(max_chars: int, min_chars: int = 0):
    """A string field with its length stated in the schema (maxLength/minLength), for constrained decoding."""
    return Annotated[str, StringConstraints(min_length=min_chars, max_length=max_chars)]


# The short justification many steps ask for next to their label: one or two sentences.
Reason = text(250)
