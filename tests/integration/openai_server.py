"""A small OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script.

The script maps each function name (the one a request's ``tool_choice`` names) to a list of
answers, returned in order, the last one repeating. An answer is the arguments of a correct call
(a dict), or one of the misbehaviours real servers show: `Prose`, `Truncated` arguments,
`InContent` (a server that ignores ``tool_choice`` and writes the JSON as text) or an HTTP
`Status` such as 429 or 500. A dict that breaks the schema is simply a dict. The name ``""``
holds the answers to requests that name no function (plain text).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Prose:
    """Plain text instead of a function call."""

    text: str = "Sure! I think the plan should be to look at the files first."


@dataclass
class Truncated:
    """A call whose arguments were cut off mid-JSON (``finish_reason: length``)."""

    args: dict[str, Any]


@dataclass
class InContent:
    """The arguments as JSON in the message text, as servers that ignore tool_choice do."""

    args: dict[str, Any]


@dataclass
class Status:
    """An HTTP error answer; ``body`` may quote what the request carried."""

    code: int
    headers: dict[str, str] = field(default_factory=dict)
    body: str = '{"error": {"message": "try again", "type": "server_error"}}'
    echo_auth: bool = False
    """Quote the request's Authorization header in the error, as careless servers do."""


@dataclass
class Request:
    """What the server received."""

    path: str
    function: str
    body: dict[str, Any]
    authorization: str


class FakeOpenAI:
    """The server; use as a context manager, then read ``base_url`` and ``requests``."""

    def __init__(self, script: dict[str, list[Any]]) -> None:
        self.script = {name: list(items) for name, items in script.items()}
        self.served = {name: 0 for name in script}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The endpoint's base URL, as a user would give it."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls(self, function: str) -> int:
        """How many requests asked for ``function``."""
        return sum(1 for r in self.requests if r.function == function)

    def _next(self, function: str) -> Any:
        with self._lock:
            items = self.script.get(function) or [Prose("I do not know that function.")]
            index = min(self.served.get(function, 0), len(items) - 1)
            self.served[function] = self.served.get(function, 0) + 1
            return items[index]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                function = _requested_function(body)
                auth = self.headers.get("authorization", "")
                with server._lock:
                    server.requests.append(Request(self.path, function, body, auth))
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                answer = server._next(function)
                if isinstance(answer, Status):
                    text = answer.body
                    if answer.echo_auth:
                        text = json.dumps({"error": {"message": f"bad credentials: {auth}"}})
                    self._send(answer.code, text, answer.headers)
                    return
                self._send(200, _completion(body, function, answer))

            def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _requested_function(body: dict[str, Any]) -> str:
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice.get("function", {}).get("name", ""))
    tools = body.get("tools") or []
    return str(tools[0]["function"]["name"]) if len(tools) == 1 else ""


def _completion(body: dict[str, Any], function: str, answer: Any) -> dict[str, Any]:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = []
    finish = "tool_calls"
    if isinstance(answer, Prose):
        content, finish = answer.text, "stop"
    elif isinstance(answer, InContent):
        content, finish = json.dumps(answer.args), "stop"
    else:
        args = json.dumps(answer.args if isinstance(answer, Truncated) else answer)
        if isinstance(answer, Truncated):
            args, finish = args[: len(args) // 2], "length"
        tool_calls = [
            {"id": "call_1", "type": "function", "function": {"name": function, "arguments": args}}
        ]
    prompt_tokens = len(json.dumps(body.get("messages", []))) // 4
    completion_tokens = len(content or json.dumps(tool_calls)) // 4
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
