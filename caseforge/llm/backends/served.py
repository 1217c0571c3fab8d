"""Which model an OpenAI-compatible endpoint serves: its /v1/models list and each answer's `model` field, against
the model configured (caseforge.llm.backends.openai_compat reads them; docs/llm.md, "Which model served")."""
from __future__ import annotations

import json
import re


class ServedModelMismatch(ValueError):
    """The endpoint does not serve the model configured, or answered under another model's name: one line, and
    nothing is cached (a ValueError: the command exits 2 with it)."""


_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")      # OpenAI's dated snapshots: gpt-4o-2024-08-06, gpt-4-0613


def same_model(wanted: str, served: str) -> bool:
    """Whether an answer's `model` field names the model asked for: the same name, or that name's dated snapshot."""
    return served == wanted or (served.startswith(wanted) and _SNAPSHOT.fullmatch(served[len(wanted):]) is not None)


def described(model: str, served_name: str, declared: bool) -> str:
    return repr(model) + (f" (served as {served_name!r})" if declared else "")


def listed_name(base_url: str, model: str, served_name: str, declared: bool, status: int, body: bytes) -> str:
    """The name the endpoint's /v1/models answer (`status`, `body`) lists for the model: `served_name` when listed,
    '' when nothing useful is listed and a served name is declared (each answer's `model` is still checked);
    ServedModelMismatch otherwise, naming the endpoint, the name configured and the names served."""
    names: list[str] = []
    if status == 200:
        try:
            data = json.loads(body).get("data")
            names = [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]
        except (ValueError, AttributeError, TypeError, RecursionError):
            names = []
    if served_name in names:
        return served_name
    if names:
        shown = ", ".join(repr(n) for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        raise ServedModelMismatch(
            f"{base_url} does not serve {described(model, served_name, declared)}: it serves {shown}; point base_url "
            f"at the server of {model!r}, or, if it serves that model under another name (vllm serve "
            f"--served-model-name, llama_cpp.server --model_alias), declare it: served_model = \"NAME\" in the "
            "backend's options")
    if declared:
        return ""
    said = (f"HTTP {status}" + (" (is base_url right? it usually ends in /v1)" if status == 404 else "")
            if status != 200 else "no model in its list")
    raise ServedModelMismatch(
        f"{base_url} does not say which model it serves ({base_url}/models: {said}), so {model!r} cannot be "
        "checked: declare the name it serves the model under, served_model = \"NAME\" in the backend's options")
