"""Model output → pydantic object, tolerating fences and chatter around one JSON object."""
from __future__ import annotations

import jsonschema
from pydantic import BaseModel, RootModel, ValidationError, model_validator

from caseforge import scoring_rules
from caseforge.llm.types import FreeText


class InvalidOutput(ValueError):
    pass


def extract_json(text: str) -> object:
    """The JSON value of a model's output (caseforge.scoring_rules.extract_json, the rule a release's harness
    applies too); InvalidOutput when there is none."""
    try:
        return scoring_rules.extract_json(text)
    except ValueError as exc:
        raise InvalidOutput(str(exc)) from None


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
