"""The OpenAI-compatible remote backend against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sgcc.llm.backends import BackendUnavailable, PromptTooLong, RemoteBackend, RequestFailed, chat_url

MESSAGES = [{"role": "user", "content": "Given the following C code..."}]


def _ok(content="<assembly>\n\tret\n</assembly>", prompt_tokens=12, completion_tokens=7):
    return {"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}}


class Server:
    """A chat-completions server whose answers follow a script: each entry is
    (status, body-bytes-or-object, delay seconds); the last entry repeats. ``respond``, when
    set, answers instead from the request body."""

    def __init__(self):
        self.script: list[tuple[int, object, float]] = [(200, _ok(), 0.0)]
        self.respond = None  # or a function of the request body -> (status, body, delay)
        self.requests: list[tuple[str, str, object]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, body_in):
                server.requests.append((self.command, self.path, body_in))
                if self.path.endswith("/models"):
                    status, body, delay = 200, {"object": "list", "data": [{"id": "served-model"}]}, 0.0
                elif server.respond is not None:
                    status, body, delay = server.respond(body_in)
                else:
                    status, body, delay = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                if delay:
                    time.sleep(delay)
                short = isinstance(body, tuple)  # ("short", data): the connection drops mid-answer
                if short:
                    body = body[1]
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data) + (100 if short else 0)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                self._answer(None)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                self._answer(json.loads(self.rfile.read(n)))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def posts(self):
        return [r for r in self.requests if r[0] == "POST"]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def test_chat_url_forms():
    assert chat_url("http://h:8080") == "http://h:8080/v1/chat/completions"
    assert chat_url("http://h:8080/") == "http://h:8080/v1/chat/completions"
    assert chat_url("http://h/v1") == "http://h/v1/chat/completions"
    assert chat_url("https://h/api/v1/chat/completions") == "https://h/api/v1/chat/completions"
    for bad in ("h:8080", "ftp://h/", "file:///etc/passwd"):
        with pytest.raises(Exception, match="not an http"):
            chat_url(bad)


def test_success(server):
    backend = RemoteBackend(server.url, model="qwen2.5-coder", timeout=10)
    done = backend.complete(MESSAGES, max_tokens=300, temperature=0.5, seed=42)
    assert done.text == "<assembly>\n\tret\n</assembly>"
    assert (done.prompt_tokens, done.completion_tokens, done.finish_reason) == (12, 7, "stop")
    assert done.tokens_per_s and done.tokens_per_s > 0
    ((method, path, body),) = server.requests
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert body == {"model": "qwen2.5-coder", "messages": MESSAGES, "max_tokens": 300, "temperature": 0.5,
                    "seed": 42, "stream": False}


def test_served_model_is_asked_when_none_is_given(server):
    backend = RemoteBackend(server.url + "/v1", timeout=10)
    backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    assert [(m, p) for m, p, _ in server.requests] == [("GET", "/v1/models"), ("POST", "/v1/chat/completions")]
    assert server.posts()[0][2]["model"] == "served-model" and "seed" not in server.posts()[0][2]
    backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    assert len(server.requests) == 3  # asked once per run


def test_slow_server_times_out(server):
    server.script = [(200, _ok(), 3.0)]
    backend = RemoteBackend(server.url, model="m", timeout=0.5, retries=2, backoff=0.01)
    started = time.perf_counter()
    expected = r"no answer from http://127\.0\.0\.1:\d+/v1/chat/completions within 0\.5 s"
    with pytest.raises(RequestFailed, match=expected) as exc:
        backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    assert time.perf_counter() - started < 2.5  # not retried: a timeout would only repeat
    assert "llm_timeout" in exc.value.hint
    assert len(server.posts()) == 1


def test_server_errors_are_retried_then_reported(server):
    server.script = [(500, {"error": {"message": "CUDA out of memory"}}, 0.0)]
    backend = RemoteBackend(server.url, model="m", timeout=10, retries=2, backoff=0.01)
    with pytest.raises(RequestFailed) as exc:
        backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    assert "failed (HTTP 500) 3 times: CUDA out of memory" in exc.value.message
    assert len(server.posts()) == 3


def test_a_retry_can_succeed(server):
    server.script = [(503, b"busy", 0.0), (502, b"<html>bad gateway</html>", 0.0), (200, _ok("fine"), 0.0)]
    backend = RemoteBackend(server.url, model="m", timeout=10, retries=3, backoff=0.01)
    assert backend.complete(MESSAGES, max_tokens=10, temperature=0.5).text == "fine"
    assert len(server.posts()) == 3


@pytest.mark.parametrize("body, words", [
    (b"this is not json {", "the endpoint's answer is not JSON: 'this is not json {'"),
    (b'{"choices": []}', "no choices[0].message.content"),
    (b'{"choices": [{"message": {"content": 42}}]}', "no choices[0].message.content"),
    (b'[1, 2, 3]', "no choices[0].message.content"),
])
def test_malformed_answers(server, body, words):
    server.script = [(200, body, 0.0)]
    backend = RemoteBackend(server.url, model="m", timeout=10, retries=0)
    with pytest.raises(RequestFailed) as exc:
        backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    assert words in exc.value.message


def test_client_errors(server):
    backend = RemoteBackend(server.url, model="m", timeout=10, retries=3, backoff=0.01)
    server.script = [(400, {"error": {"message": "the request exceeds the available context size (4096 tokens)"}}, 0.0)]
    with pytest.raises(PromptTooLong, match="exceeds the available context size"):
        backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    server.script = [(400, {"error": {"message": "temperature must be positive"}}, 0.0)]
    with pytest.raises(RequestFailed, match=r"rejected the request \(HTTP 400\): temperature must be positive"):
        backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    server.script = [(404, {"detail": "Not Found"}, 0.0)]
    with pytest.raises(BackendUnavailable, match="no chat completions API"):
        backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    server.script = [(401, {"error": "invalid api key"}, 0.0)]
    with pytest.raises(BackendUnavailable, match=r"refused the request \(HTTP 401\): invalid api key"):
        backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    assert len(server.posts()) == 4  # 4xx are not retried


def test_nothing_listening():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = RemoteBackend(f"http://127.0.0.1:{port}", model="m", timeout=5, retries=2, backoff=0.01)
    with pytest.raises(BackendUnavailable, match=r"no usable connection to the endpoint .* \(3 attempts\)") as exc:
        backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
    assert "is the server running" in exc.value.hint


def test_connections_dropped_mid_answer_are_retried(server):
    server.script = [(200, ("short", b'{"choices": [{"mess'), 0.0), (200, _ok("whole"), 0.0)]
    backend = RemoteBackend(server.url, model="m", timeout=10, retries=2, backoff=0.01)
    assert backend.complete(MESSAGES, max_tokens=10, temperature=0.5).text == "whole"
    server.script = [(200, ("short", b'{"choices": [{"mess'), 0.0)]
    with pytest.raises(BackendUnavailable, match=r"IncompleteRead.*\(3 attempts\)"):
        backend.complete(MESSAGES, max_tokens=10, temperature=0.5)
