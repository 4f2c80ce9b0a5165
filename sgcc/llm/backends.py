"""Where answers come from: a local GGUF model, an OpenAI-compatible endpoint, or a script.

Every backend has ``describe()`` (a short label for reports and the progress display),
``load()`` (idempotent: the expensive part, done once per run) and
``complete(messages, *, max_tokens, temperature, seed, label, on_progress) -> Completion``.
``complete`` raises

- :class:`PromptTooLong` when the prompt and the answer's ``max_tokens`` do not fit the
  model's context (the prompt is never truncated),
- :class:`RequestFailed` when this one request failed (a timeout, a malformed answer),
- :class:`BackendUnavailable` when no request can succeed (no llama-cpp-python, a model
  llama.cpp cannot load, an endpoint that refuses connections or says the API is not there).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sgcc.errors import SgccError

if TYPE_CHECKING:
    from llama_cpp import Llama, StoppingCriteria, StoppingCriteriaList
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

#: The most context a model gets when the user does not say (its training context may be 128k).
DEFAULT_CONTEXT_CAP = 8192

ProgressFn = Callable[[int, float], None]  # (tokens generated so far, seconds since the start)


class BackendError(SgccError):
    """A backend could not answer."""


class PromptTooLong(BackendError):
    """The prompt plus the answer's token budget exceed the context: skip, do not truncate."""

    def __init__(self, prompt_tokens: int | None, max_tokens: int, context: int | None, detail: str = ""):
        if prompt_tokens is not None and context is not None:
            msg = (f"the prompt ({prompt_tokens} tokens) plus {max_tokens} tokens for the answer do not fit "
                   f"the model's context of {context} tokens")
        else:
            msg = f"the prompt does not fit the model's context ({detail})" if detail else \
                "the prompt does not fit the model's context"
        super().__init__(msg, hint="raise --context (or the server's context), or lower --max-tokens")
        self.prompt_tokens, self.context = prompt_tokens, context


class RequestFailed(BackendError):
    """This request failed; others may succeed."""


class BackendUnavailable(BackendError):
    """Nothing can be generated (model not loadable, endpoint unreachable or misconfigured)."""


@dataclass
class Completion:
    """One answer and what it cost."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    seconds: float
    finish_reason: str = ""  # "stop", "length" (cut at max_tokens), or what the server says
    first_token_seconds: float | None = None  # time to the first token: mostly reading the prompt

    @property
    def tokens_per_s(self) -> float | None:
        if not self.completion_tokens or self.seconds <= 0:
            return None
        return self.completion_tokens / self.seconds


class Backend(Protocol):
    """What the llm generator (:mod:`sgcc.candidates.llm`) asks of a model: every backend here
    (:class:`LlamaCppBackend`, :class:`RemoteBackend`, :class:`ScriptedBackend`) has it."""

    #: Whether it answers several requests at once (a server), so samples are asked in parallel.
    concurrent: bool

    def describe(self) -> str:
        """The model as progress lines and reports name it."""
        ...

    def load(self) -> None:
        """Get ready (load the model, reach the server); raises :class:`BackendError`."""
        ...

    def complete(self, messages: list[dict], *, max_tokens: int, temperature: float, seed: int | None = None,
                 label: str = "", on_progress: ProgressFn | None = None) -> Completion:
        """One answer to ``messages``; raises :class:`BackendError`."""
        ...

    def close(self) -> None:
        """Release the model or the connection."""
        ...


def default_threads() -> int:
    """All cores this process may use."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# --------------------------------------------------------------------------- llama.cpp


class _Counter:
    """A llama-cpp-python stopping criterion that never stops: counts tokens, reports progress."""

    def __init__(self, on_progress: ProgressFn | None, every: float = 3.0):
        self.tokens = 0
        self.started = time.perf_counter()
        self.first: float | None = None  # seconds to the first token
        self.on_progress, self.every = on_progress, every
        self._last = self.started

    def __call__(self, input_ids, logits) -> bool:  # llama-cpp-python's signature (both unused)
        self.tokens += 1
        if self.first is None:
            self.first = time.perf_counter() - self.started
        if self.on_progress is not None:
            now = time.perf_counter()
            if now - self._last >= self.every:
                self._last = now
                try:
                    self.on_progress(self.tokens, now - self.started)
                except Exception:  # noqa: BLE001 - a display problem must not stop generation
                    pass
        return False


class LlamaCppBackend:
    """A local GGUF model through llama-cpp-python, loaded once and kept for the whole run.

    The prompt is rendered with the model's own chat template (``tokenizer.chat_template``
    in the GGUF file, through llama-cpp-python's Jinja2 chat formatter, exactly as its
    ``create_chat_completion`` does), tokenized, and checked against the context *before*
    anything is evaluated: a prompt that does not leave room for ``max_tokens`` raises
    :class:`PromptTooLong`. A model without a chat template gets the messages' text as a
    plain completion prompt.
    """

    concurrent = False

    def __init__(self, model_path: str | os.PathLike, *, context: int = 0, threads: int = 0,
                 train_context: int | None = None, name: str = "", verbose: bool = False):
        self.model_path = str(model_path)
        self.name = name or Path(self.model_path).name
        self.threads = threads or default_threads()
        if context > 0:
            self.context = context
        else:
            self.context = min(train_context or DEFAULT_CONTEXT_CAP, DEFAULT_CONTEXT_CAP)
        self.verbose = verbose
        self.llm: Llama | None = None
        self.load_seconds: float | None = None
        self._formatter: Jinja2ChatFormatter | None = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        return f"{self.name} (llama.cpp, context {self.context}, {self.threads} threads)"

    def load(self) -> None:
        with self._lock:
            if self.llm is not None:
                return
            try:
                from llama_cpp import Llama  # lazily: the compile path never pays for it
                from llama_cpp.llama_chat_format import Jinja2ChatFormatter
            except ImportError as exc:
                raise BackendUnavailable("llama-cpp-python is not installed, so local models cannot run",
                                         hint="pip install llama-cpp-python, or use --endpoint URL",
                                         cause=exc) from exc
            started = time.perf_counter()
            try:
                llm = Llama(model_path=self.model_path, n_ctx=self.context, n_threads=self.threads,
                            n_threads_batch=self.threads, verbose=self.verbose)
            except Exception as exc:  # llama-cpp-python raises ValueError/RuntimeError with little detail
                raise BackendUnavailable(f"llama.cpp cannot load the model {self.model_path}",
                                         hint="the file may be corrupt, or need a newer llama-cpp-python",
                                         cause=exc) from exc
            self.load_seconds = time.perf_counter() - started
            template = llm.metadata.get("tokenizer.chat_template")
            if template:
                eos_id, bos_id = llm.token_eos(), llm.token_bos()
                eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
                bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
                self._formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                                      stop_token_ids=[eos_id])
            self.llm = llm

    def _loaded(self) -> Llama:
        """The model, loaded (:meth:`load` raises where it cannot be)."""
        self.load()
        assert self.llm is not None  # load() sets it or raises
        return self.llm

    def render(self, messages: list[dict]) -> tuple[list[int], list[str], StoppingCriteriaList | None]:
        """The prompt's tokens, stop strings and stopping criteria, as the chat handler makes them."""
        llm = self._loaded()
        if self._formatter is None:
            text = "\n\n".join(m["content"] for m in messages) + "\n"
            return llm.tokenize(text.encode("utf-8"), add_bos=True, special=False), [], None
        # Our messages are plain {role, content} dicts, which llama_cpp's per-role TypedDicts describe.
        result = self._formatter(messages=messages)  # type: ignore[arg-type]
        tokens = llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
        stop = result.stop if isinstance(result.stop, list) else ([result.stop] if result.stop else [])
        return tokens, stop, result.stopping_criteria

    def count_tokens(self, messages: list[dict]) -> int:
        return len(self.render(messages)[0])

    def complete(self, messages: list[dict], *, max_tokens: int, temperature: float, seed: int | None = None,
                 label: str = "", on_progress: ProgressFn | None = None) -> Completion:
        from llama_cpp import StoppingCriteriaList

        llm = self._loaded()
        tokens, stop, criteria = self.render(messages)
        if len(tokens) + max_tokens > self.context:
            raise PromptTooLong(len(tokens), max_tokens, self.context)
        counter = _Counter(on_progress)
        checks: list[StoppingCriteria] = [counter]
        if criteria is not None:
            checks.append(criteria)
        stopping = StoppingCriteriaList(checks)
        if seed is None:
            seed = random.SystemRandom().randrange(1 << 31)
        with self._lock:
            started = time.perf_counter()
            try:
                out = llm.create_completion(prompt=tokens, max_tokens=max_tokens, temperature=temperature,
                                            stop=stop, seed=seed, stopping_criteria=stopping)
            except Exception as exc:  # llama.cpp errors become this request's failure
                raise RequestFailed(f"llama.cpp failed to generate: {exc}") from exc
            seconds = time.perf_counter() - started
        if isinstance(out, Iterator):  # a stream: only with stream=True, which is never asked for
            raise RequestFailed("llama.cpp answered with a stream")
        choice = out["choices"][0]
        usage: Mapping[str, Any] = out.get("usage") or {}
        return Completion(choice.get("text") or "", usage.get("prompt_tokens", len(tokens)),
                          usage.get("completion_tokens", counter.tokens), seconds, choice.get("finish_reason") or "",
                          counter.first)

    def close(self) -> None:
        llm, self.llm = self.llm, None
        if llm is not None and hasattr(llm, "close"):
            try:
                llm.close()
            except Exception:  # noqa: BLE001
                pass


# --------------------------------------------------------------------------- remote


def chat_url(endpoint: str) -> str:
    """The chat-completions URL for ``endpoint`` (a server root, ``.../v1``, or the full URL)."""
    parsed = urllib.parse.urlsplit(endpoint.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise SgccError(f"--endpoint {endpoint!r} is not an http(s) URL",
                        hint="e.g. http://127.0.0.1:8080 for llama.cpp's server, http://localhost:11434 for Ollama")
    path = parsed.path.rstrip("/")
    if path.endswith("/chat/completions"):
        pass
    elif path.endswith("/v1"):
        path += "/chat/completions"
    else:
        path += "/v1/chat/completions"
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, parsed.query, ""))


class RemoteBackend:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint (llama.cpp's server, vLLM, Ollama).

    Standard library HTTP only. Connection errors, 429 and 5xx answers are retried with
    exponential backoff (``retries`` times); a request that gets no answer within
    ``timeout`` seconds fails; 4xx answers, non-JSON or malformed JSON fail with the
    server's own message. ``model`` is the server's model name; when empty, the first
    model of ``GET /v1/models`` is used (or none is sent).
    """

    concurrent = True
    RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

    def __init__(self, endpoint: str, *, model: str = "", timeout: float = 600.0, retries: int = 3,
                 backoff: float = 1.0, headers: dict | None = None):
        self.url = chat_url(endpoint)
        self.endpoint = endpoint
        self.model = model
        self.timeout = float(timeout)
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json",
                        "User-Agent": "sgcc", **(headers or {})}
        self._loaded = False
        self._lock = threading.Lock()

    def describe(self) -> str:
        return f"{self.model or 'the served model'} at {self.url}"

    # -- HTTP ---------------------------------------------------------------------------

    def _request(self, url: str, body: dict | None) -> tuple[int, bytes]:
        """One HTTP exchange: (status, body). Raises OSError-family errors for the transport."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, headers=self.headers,  # noqa: S310 - http(s) only, checked
                                     method="GET" if body is None else "POST")
        deadline = time.monotonic() + self.timeout
        try:
            resp = urllib.request.urlopen(req, timeout=self.timeout)  # noqa: S310 - http(s) only, checked
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, exc.read(1 << 20)
        with resp:
            chunks, total = [], 0
            while True:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the answer took more than {self.timeout:g} s")
                chunk = resp.read(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > 64 << 20:
                    raise RequestFailed(f"the endpoint's answer is larger than 64 MB ({self.url})")
            length = resp.getheader("Content-Length")
            if length and length.isdigit() and total < int(length):  # the connection dropped mid-answer
                raise http.client.IncompleteRead(b"".join(chunks), int(length) - total)
            return resp.status, b"".join(chunks)

    def _exchange(self, url: str, body: dict | None) -> tuple[int, bytes]:
        """:meth:`_request` with retries on connection errors, 429 and 5xx."""
        attempt = 0
        while True:
            try:
                status, data = self._request(url, body)
            except TimeoutError as exc:
                raise RequestFailed(f"no answer from {url} within {self.timeout:g} s",
                                    hint="a slow model or server: raise llm_timeout (SGCC_LLM_TIMEOUT)",
                                    cause=exc) from exc
            except (urllib.error.URLError, ConnectionError, OSError, http.client.HTTPException) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    raise RequestFailed(f"no answer from {url} within {self.timeout:g} s",
                                        hint="raise llm_timeout (SGCC_LLM_TIMEOUT)", cause=exc) from exc
                if attempt >= self.retries:
                    raise BackendUnavailable(f"no usable connection to the endpoint {url}: {reason!s} "
                                             f"({attempt + 1} attempts)",
                                             hint="is the server running? check --endpoint") from exc
            else:
                if status not in self.RETRY_STATUS:
                    return status, data
                if attempt >= self.retries:
                    return status, data
            attempt += 1
            time.sleep(self.backoff * (2 ** (attempt - 1)) * (0.75 + 0.5 * random.random()))

    @staticmethod
    def _server_message(data: bytes) -> str:
        text = data.decode("utf-8", errors="replace").strip()
        try:
            obj = json.loads(text)
            err = obj.get("error") if isinstance(obj, dict) else None
            if isinstance(err, dict) and err.get("message"):
                text = str(err["message"])
            elif isinstance(err, str):
                text = err
            elif isinstance(obj, dict) and obj.get("message"):
                text = str(obj["message"])
        except ValueError:
            pass
        text = " ".join(text.split())
        return text[:300] + ("..." if len(text) > 300 else "")

    # -- the API --------------------------------------------------------------------------

    def load(self) -> None:
        """Find the served model's name when none was given (``GET /v1/models``)."""
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            if self.model:
                return
            models_url = self.url[: -len("/chat/completions")] + "/models"
            try:
                status, data = self._exchange(models_url, None)
            except RequestFailed:
                return
            if status == 200:
                try:
                    listed = json.loads(data.decode("utf-8")).get("data") or []
                    if listed and isinstance(listed[0], dict) and listed[0].get("id"):
                        self.model = str(listed[0]["id"])
                except (ValueError, AttributeError):
                    pass

    def complete(self, messages: list[dict], *, max_tokens: int, temperature: float, seed: int | None = None,
                 label: str = "", on_progress: ProgressFn | None = None) -> Completion:
        self.load()
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature, "stream": False}
        if self.model:
            body["model"] = self.model
        if seed is not None:
            body["seed"] = seed
        started = time.perf_counter()
        status, data = self._exchange(self.url, body)
        seconds = time.perf_counter() - started
        if status != 200:
            message = self._server_message(data)
            if status == 400 and "context" in message.lower():
                raise PromptTooLong(None, max_tokens, None, f"the server says: {message}")
            if status in (401, 403):
                raise BackendUnavailable(f"the endpoint {self.url} refused the request (HTTP {status}): {message}")
            if status == 404:
                raise BackendUnavailable(f"no chat completions API at {self.url} (HTTP 404): {message}",
                                         hint="--endpoint takes the server's base URL, e.g. http://host:8080")
            if status in self.RETRY_STATUS:
                raise RequestFailed(f"the endpoint {self.url} failed (HTTP {status}) "
                                    f"{self.retries + 1} times: {message}")
            raise RequestFailed(f"the endpoint {self.url} rejected the request (HTTP {status}): {message}")
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            excerpt = data[:120].decode("utf-8", errors="replace")
            raise RequestFailed(f"the endpoint's answer is not JSON: {excerpt!r}") from exc
        try:
            choice = obj["choices"][0]
            content = choice["message"].get("content") or ""
            if not isinstance(content, str):
                raise TypeError("content is not a string")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise RequestFailed(f"the endpoint's JSON has no choices[0].message.content "
                                f"({type(exc).__name__}: {exc})") from exc
        usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
        completion_tokens = usage.get("completion_tokens")
        prompt_tokens = usage.get("prompt_tokens")
        return Completion(content, prompt_tokens if isinstance(prompt_tokens, int) else None,
                          completion_tokens if isinstance(completion_tokens, int) else None, seconds,
                          str(choice.get("finish_reason") or ""))

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- scripted


class ScriptedBackend:
    """Answers from a script, in order: for tests and demonstrations (``--model fake:FILE.json``).

    The script is a list of answers, or an object mapping a function name (the ``label`` of
    the request) to its list, with ``"*"`` for any other function, and optionally
    ``"context"`` (tokens; a prompt is counted as one token per 4 characters). An answer is
    a string or ``{"text": ..., "delay": seconds, "finish": "length"}`` or
    ``{"error": message}`` (the request fails). Every request is kept in ``requests``.
    Generation time is simulated at ``tokens_per_s`` (an answer of 4 characters per token)
    so that reports and the progress display show the same figures as with a real model.
    """

    concurrent = False

    def __init__(self, script, *, context: int = 1 << 20, name: str = "scripted", tokens_per_s: float = 1000.0):
        if isinstance(script, list):
            script = {"*": script}
        if not isinstance(script, dict):
            raise SgccError("a scripted model is a JSON list of answers or an object of lists")
        self.context = int(script.pop("context", context)) if "context" in script else context
        self.queues = {k: list(v) for k, v in script.items()}
        self.name = name
        self.tokens_per_s = float(tokens_per_s)
        self.requests: list[dict] = []
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> ScriptedBackend:
        path = Path(path)
        try:
            script = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SgccError(f"cannot read the scripted answers {path}", cause=exc) from exc
        return cls(script, name=f"fake:{path.name}")

    def describe(self) -> str:
        return f"{self.name} (scripted answers)"

    def load(self) -> None:
        pass

    @staticmethod
    def count_tokens(messages: list[dict]) -> int:
        return sum(len(m["content"]) for m in messages) // 4 + 1

    def complete(self, messages: list[dict], *, max_tokens: int, temperature: float, seed: int | None = None,
                 label: str = "", on_progress: ProgressFn | None = None) -> Completion:
        prompt_tokens = self.count_tokens(messages)
        if prompt_tokens + max_tokens > self.context:
            raise PromptTooLong(prompt_tokens, max_tokens, self.context)
        with self._lock:
            self.requests.append({"label": label, "messages": [dict(m) for m in messages], "seed": seed,
                                  "temperature": temperature, "max_tokens": max_tokens})
            queue = self.queues.get(label) if self.queues.get(label) else self.queues.get("*")
            if not queue:
                raise RequestFailed(f"the scripted answers for {label or 'this function'} are used up")
            item = queue.pop(0)
        started = time.perf_counter()
        if isinstance(item, dict):
            if "error" in item:
                raise RequestFailed(str(item["error"]))
            if item.get("delay"):
                time.sleep(float(item["delay"]))
            text, finish = str(item.get("text", "")), str(item.get("finish", "stop"))
        else:
            text, finish = str(item), "stop"
        tokens = max(1, len(text) // 4)
        seconds = time.perf_counter() - started + tokens / self.tokens_per_s
        return Completion(text, prompt_tokens, tokens, seconds, finish)

    def close(self) -> None:
        pass
