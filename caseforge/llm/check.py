"""One check of the whole LLM configuration (`caseforge llm check`): for every step of the pipelines asked
about, the backend, model and endpoint each role resolves to, and one tiny structured request per distinct
backend, model and endpoint.

The probe asks for a single word but sends a JSON schema that only a constrained answer meets
({"caseforge_check": "ready"}): a server that honours the schema answers with that object, one that ignores
it answers in prose. What can go wrong, each one problem of its own line:

- a role without a model (the choice itself fails);
- an endpoint that does not answer (refused, timed out, 5xx, 401/404), naming its URL;
- an empty answer (a chat template the server lacks, e.g. llama_cpp.server without --chat_format);
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
    problem: str | None = None

    @property
    def status(self) -> str:
        return "ok" if self.problem is None and self.answer is not None else "failed" if self.problem else "-"

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


def probe_request() -> LLMRequest:
    return LLMRequest(key="check", messages=[{"role": "user", "content": "Reply with the single word: ready"}],
                      params=SamplingParams(max_tokens=32), template_id="llm-check", template_sha="-",
                      json_schema=PROBE_SCHEMA)


def send_probe(probe: Probe, timeout_s: float = 30.0) -> None:
    """Send the tiny structured request of one probe and say what was wrong, if anything."""
    choice = probe.uses[0].choice
    if choice.backend == "replay":          # nothing to ask: the file is the answer
        try:
            backend_for(choice)
            probe.answer = "(replay file readable)"
        except Exception as exc:        # noqa: BLE001 - reported as the probe's problem
            probe.problem = f"{probe.who()}: {type(exc).__name__}: {exc}"
        return
    options = dict(choice.options)
    if choice.backend == "openai":
        options.update(timeout_s=min(float(options.get("timeout_s", timeout_s)), timeout_s), max_retries=1)
    try:
        backend = backend_for(replace(choice, options=options))
        [completion] = backend.complete_batch([probe_request()])
    except Exception as exc:            # noqa: BLE001 - the point of the check is to say why
        probe.problem = f"{probe.who()} did not answer: {type(exc).__name__}: {exc}"
        return
    probe.latency_ms = None if completion.latency_s is None else completion.latency_s * 1000
    if completion.error:
        verb = "did not answer" if not completion.answered else "refused the request"
        probe.problem = f"{probe.who()} {verb}: {completion.error}"
        return
    text = (completion.text or "").strip()
    probe.answer = text
    if not text:
        probe.problem = (f"{probe.who()} answered with empty content: the server may lack the model's chat "
                         "template (llama_cpp.server: --chat_format, e.g. gemma or chatml)")
        return
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if parsed != PROBE_ANSWER:
        how = probe.structured
        hint = (f"; the schema was sent as structured = \"{how}\" (for {STRUCTURED_HINT.get(how, how)}): set "
                "structured to what this server reads (vllm, openai or llamacpp)") if how else ""
        probe.problem = f"{probe.who()} ignores the JSON schema: answered {text[:60]!r}{hint}"
