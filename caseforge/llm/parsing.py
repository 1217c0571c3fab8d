"""Model output → pydantic object, tolerating fences and chatter around one JSON object."""
from __future__ import annotations

import json
import re

import jsonschema
from pydantic import BaseModel, RootModel, ValidationError, model_validator

from caseforge.llm.types import FreeText

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


class InvalidOutput(ValueError):
    pass


def _balanced_objects(text: str):
    """Yield each top-level {...} span, respecting strings and escapes."""
    depth, start, in_string, escaped = 0, None, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"' and depth > 0:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0 and start is not None:
                yield text[start:i + 1]
                start = None


def extract_json(text: str) -> object:
    if text is None or not text.strip():
        raise InvalidOutput("empty output")
    stripped = text.strip()
    # strict=False: a raw control character inside a string is read as itself. llama-cpp-python's grammar
    # lets a model write line breaks unescaped inside a JSON string.
    # besides JSONDecodeError: ValueError for a number over 4,300 digits, RecursionError for deep nesting
    try:
        return json.loads(stripped, strict=False)
    except (ValueError, RecursionError):
        pass
    candidates = [m.group(1) for m in _FENCE.finditer(stripped)] + list(_balanced_objects(stripped))
    for candidate in candidates:
        try:
            return json.loads(candidate.strip(), strict=False)
        except (ValueError, RecursionError):
            continue
    raise InvalidOutput(f"no JSON object found in output: {stripped[:120]!r}")


def schema_for(model: type[BaseModel]) -> dict:
    """The JSON schema requests for `model` carry."""
    return model.model_json_schema()


def parse_output(text: str | None, model: type[BaseModel]) -> BaseModel:
    if model is FreeText:
        if text is None or not text.strip():
            raise InvalidOutput("empty output")
        return FreeText(text=text)
    data = extract_json(text or "")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise InvalidOutput(f"output does not match {model.__name__}: {problems}") from exc


def schema_output_model(schema: dict) -> type[BaseModel]:
    """A pydantic model that accepts exactly what the JSON schema `schema` accepts.

    A shard worker checks answers with it: every request carries the JSON schema of its step's
    output model, so no Python class has to be named across processes. The parent, merging the
    shard, parses the same answers into the step's real model.
    """
    validator = jsonschema.Draft202012Validator(schema)

    class SchemaOutput(RootModel[dict]):
        @model_validator(mode="after")
        def _matches_schema(self):
            error = jsonschema.exceptions.best_match(validator.iter_errors(self.root))
            if error is not None:
                where = ".".join(map(str, error.absolute_path)) or "output"
                raise ValueError(f"{where}: {error.message}")
            return self

    SchemaOutput.__name__ = str(schema.get("title") or "SchemaOutput")
    return SchemaOutput
