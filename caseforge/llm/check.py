"""One check of the whole LLM configuration (`caseforge llm check`): for every step of the pipelines asked
about, the backend, model and endpoint each role resolves to, and two tiny requests per distinct backend, model
and endpoint.

The structured probe asks for a single word but sends a JSON schema that only a constrained answer meets
({"caseforge_check": "ready"}): a server that honours the schema answers with that object, one that ignores
it answers in prose. The free-text probe asks the same without a schema, as `llm ping` does and as the prose
steps do: a grammar forces a non-empty answer, so only a request without one shows a model that writes nothing
(Gemma served without its chat format). What can go wrong, each one problem of its own line:

- a role without a model (the choice itself fails);
- an endpoint that does not serve the model configured (its /v1/models, or the answer's `model`, names
  another: caseforge.llm.backends.openai_compat.ServedModelMismatch);
- an endpoint that does not answer (refused, timed out, 5xx, 401/404), naming its URL;
- an empty answer to either probe (a chat template the server lacks, e.g. llama_cpp.server without --chat_format);
- an answer that is not the schema's object: the server ignored the schema (the `structured` option names
  how it is sent; each server expects its own).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from caseforge.llm.config import LLMChoice, backend_for
from caseforge.llm.types import LLMRequest, SamplingParams

PROBE_SCHEMA = {"type": "object", "title": "caseforge_check",
                "properties": {"caseforge_check": {"type": "string", "enum": ["ready"]}},
                "required": ["caseforge_check"], "additionalProperties": False}
PROBE_ANSWER = {"caseforge_check": "ready"}
STRUCTURED_HINT = {"vllm": "vllm serve", "openai": "OpenAI's API and vllm serve", "llamacpp": "llama_cpp.server"}


@dataclass
class Use:
    """One step of a pipeline in one role, and what it resolves to (or why it does not)."""

    pipeline: str
    step: str
    role: str
    choice: LLMChoice | None = None
    problem: str | None = None       # the choice could not be made (no model for the role, ...)
    allow_same_family: bool = False  # the pipeline's own options let its checker share the writer's family


@dataclass
class Probe:
    """One distinct backend, model and endpoint, and how its tiny request went."""

    backend: str
    model: str
    endpoint: str
    structured: str | None
    uses: list[Use] = field(default_factory=list)
    answer: str | None = None
    latency_ms: float | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "failed" if self.problems else "ok" if self.answer is not None else "-"

    def who(self) -> str:
        roles = sorted({u.role for u in self.uses})
        return f"{'/'.join(roles)} {self.backend}:{self.model} at {self.endpoint}"


# pipelines that refuse a checker of the writer's family unless allowed (--allow-same-family, or the nightly's
# allow_same_family option); the others only warn
REFUSES_SAME_FAMILY = {"build casefacts": ("generator", "validator"), "eval casegen": ("system", "judge")}


def family_findings(uses: list[Use]) -> tuple[list[str], list[str]]:
    """(problems, warnings): a checking role (validator, judge, nli) given a model of the family of the model it
    checks; a problem where the pipeline would refuse it, a warning where it only warns."""
    from caseforge.families import family_of

    problems, warnings = [], []
    by_pipeline: dict[str, dict[str, set]] = {}
    allowed: dict[str, bool] = {}
    for use in uses:
        if use.choice is not None:
            by_pipeline.setdefault(use.pipeline, {}).setdefault(use.role, set()).add(use.choice.model)
            allowed[use.pipeline] = allowed.get(use.pipeline, False) or use.allow_same_family
    for pipeline, roles in sorted(by_pipeline.items()):
        writers = roles.get("generator", set()) | roles.get("system", set())
        for role in ("validator", "judge", "nli"):
            for checker in sorted(roles.get(role, ())):
                for writer in sorted(writers):
                    family = family_of(writer)
                    if not family or family != family_of(checker):
                        continue
                    said = (f"{pipeline}: the {role} {checker} is of the {family} family, like {writer}, whose "
                            f"output it checks (a model favours its own family's output)")
                    if role in REFUSES_SAME_FAMILY.get(pipeline, ()) and not allowed[pipeline]:
                        problems.append(f"{said}: the pipeline refuses it; choose a {role} of another family, or "
                                        f"allow it (--allow-same-family, or allow_same_family = true in its "
                                        f"[nightly] table)")
                    else:
                        warnings.append(said)
    return problems, warnings


def endpoint_of(choice: LLMChoice) -> tuple[str, str | None]:
    """Where a choice's requests go, and how its schema is sent (openai only)."""
    options = choice.backend_options()
    if choice.backend == "openai":
        from caseforge.llm.backends.openai_compat import DEFAULT_BASE_URL

        url = options.get("base_url") or DEFAULT_BASE_URL
        return str(url).rstrip("/"), str(options.get("structured", "vllm"))
    if choice.backend == "replay":
        return f"replay file {options.get('replay_file') or '(none)'}", None
    return f"in process ({choice.backend})", None


def group(uses: list[Use]) -> list[Probe]:
    """The distinct backend, model and endpoint the uses resolve to, each with its uses."""
    probes: dict[tuple, Probe] = {}
    for use in uses:
        if use.choice is None:
            continue
        endpoint, structured = endpoint_of(use.choice)
        key = (use.choice.backend, use.choice.model, endpoint, structured,
               json.dumps(use.choice.identity()["options"], sort_keys=True, default=str))
        probes.setdefault(key, Probe(use.choice.backend, use.choice.model, endpoint, structured)).uses.append(use)
    return list(probes.values())


PROBE_TEXT = "Reply with the single word: ready"
EMPTY_HINT = "the server may lack the model's chat template (llama_cpp.server: --chat_format, e.g. gemma or chatml)"


def probe_request() -> LLMRequest:
    return LLMRequest(key="check", messages=[{"role": "user", "content": PROBE_TEXT}],
                      params=SamplingParams(max_tokens=32), template_id="llm-check", template_sha="-",
                      json_schema=PROBE_SCHEMA)


def free_text_request() -> LLMRequest:
    """The probe without a schema (`llm check`'s second request, `llm ping`'s only one)."""
    return LLMRequest(key="free-text", messages=[{"role": "user", "content": PROBE_TEXT}],
                      params=SamplingParams(max_tokens=8), template_id="llm-ping", template_sha="-")


def probe_timeout(options: dict, flag: float | None, default: float) -> float:
    """How long a probe may wait: the command's flag when given (it wins over the settings file), else the
    settings' timeout_s, at most `default`."""
    if flag is not None:
        return float(flag)
    return min(float(options.get("timeout_s", default)), default)


def send_probe(probe: Probe, timeout_s: float | None = None, default_timeout_s: float = 60.0) -> None:
    """Send the structured and the free-text request of one probe and say what was wrong, if anything."""
    from caseforge.llm.backends.openai_compat import ServedModelMismatch

    choice = probe.uses[0].choice
    if choice.backend == "replay":          # nothing to ask: the file is the answer
        try:
            backend_for(choice)
            probe.answer = "(replay file readable)"
        except Exception as exc:        # noqa: BLE001 - reported as the probe's problem
            probe.problems.append(f"{probe.who()}: {type(exc).__name__}: {exc}")
        return
    options = dict(choice.options)
    if choice.backend == "openai":
        options.update(timeout_s=probe_timeout(options, timeout_s, default_timeout_s), max_retries=1)
    try:
        backend = backend_for(replace(choice, options=options))
        structured, free_text = backend.complete_batch([probe_request(), free_text_request()])
    except ServedModelMismatch as exc:
        probe.problems.append(f"{probe.who()}: {exc}")
        return
    except Exception as exc:            # noqa: BLE001 - the point of the check is to say why
        probe.problems.append(f"{probe.who()} did not answer: {type(exc).__name__}: {exc}")
        return
    probe.latency_ms = None if structured.latency_s is None else structured.latency_s * 1000
    for completion in (structured, free_text):
        if completion.error:
            verb = "did not answer" if not completion.answered else "refused the request"
            probe.problems.append(f"{probe.who()} {verb}: {completion.error}")
            return                      # the endpoint's problem: once, not once per probe
    text = (structured.text or "").strip()
    probe.answer = text
    if not text:
        probe.problems.append(f"{probe.who()} answered with empty content: {EMPTY_HINT}")
    else:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if parsed != PROBE_ANSWER:
            how = probe.structured
            hint = (f"; the schema was sent as structured = \"{how}\" (for {STRUCTURED_HINT.get(how, how)}): set "
                    "structured to what this server reads (vllm, openai or llamacpp)") if how else ""
            probe.problems.append(f"{probe.who()} ignores the JSON schema: answered {text[:60]!r}{hint}")
    if text and not (free_text.text or "").strip():     # an empty structured answer said it already
        probe.problems.append(f"{probe.who()} answered a request without a schema (as the prose steps send) with "
                              f"empty content: {EMPTY_HINT}")
