"""A tiny OpenAI-compatible fixture judge for the PEER libraries (ragas, deepeval).

``tests/helpers/judge_server.py`` reads our tags (``<question>``, ``<context>``...), which
the peers' own prompts do not have. This server instead finds which of the known chunk texts
occur in the last user message (the chunk texts are unique by construction and none is a
substring of another) and answers with the verdicts of the same labels file, in the JSON shape each
library's prompt asks for:

* exactly one known chunk in the prompt (ragas, pointwise): ``{"reason", "verdict": 0|1}``;
* several chunks (deepeval, listwise): ``{"verdicts": [{"verdict": "yes"|"no", "reason"}]}``
  in the order the chunks appear in the prompt;
* no chunk (deepeval's reason call): ``{"reason": "..."}``.

If the request carries ``tools`` (instructor's TOOLS mode) the answer is a tool call to the
first tool with that JSON as arguments; otherwise the JSON is the message content.

Stdlib only. Run as ``python peer_judge.py LABELS.json`` : prints ``READY <base_url>`` and
serves until SIGTERM; then prints ``STATS {json}`` on stderr. Also importable
(``PeerJudge(labels).start()``).
"""

from __future__ import annotations

import json
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


class PeerJudge:
    def __init__(self, labels: list[dict[str, Any]]) -> None:
        self.labels = {item["chunk"]: int(item["label"]) for item in labels}
        # one regex alternation finds every known chunk in a prompt in a single pass
        chunks = sorted(self.labels, key=len, reverse=True)
        self._rx = re.compile("|".join(re.escape(c) for c in chunks))
        self.stats = {"requests": 0, "pointwise": 0, "listwise": 0, "reason": 0,
                      "tool_calls": 0, "other": 0}
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    # -- answering ------------------------------------------------------------------------
    def answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        text = _last_user_text(body)
        # deepeval's reason prompt also lists the chunks (as "node"), so it is told apart first
        if "contextual precision score" in text.lower():
            return {"reason": "The score reflects where the relevant chunks rank."}, "reason"
        found = [m.group(0) for m in self._rx.finditer(text)]
        if len(found) == 1:
            v = self.labels[found[0]]
            return {"reason": "fixture verdict", "verdict": v}, "pointwise"
        if len(found) > 1:
            verdicts = [{"verdict": "yes" if self.labels[c] else "no",
                         "reason": "fixture verdict"} for c in found]
            return {"verdicts": verdicts}, "listwise"
        return {"reason": "unknown request"}, "other"

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        payload, kind = self.answer(body)
        content = json.dumps(payload)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        tools = body.get("tools") or []
        with self.lock:
            self.stats["requests"] += 1
            self.stats[kind] += 1
            if tools:
                self.stats["tool_calls"] += 1
        if tools:
            name = tools[0].get("function", {}).get("name", "tool")
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_0", "type": "function",
                "function": {"name": name, "arguments": content}}]}
        n = int(body.get("n") or 1)
        return {
            "id": "chatcmpl-fixture", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "peer-judge"),
            "choices": [{"index": i, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if tools else "stop"} for i in range(n)],
            "usage": {"prompt_tokens": len(_last_user_text(body)) // 4,
                      "completion_tokens": len(content) // 4,
                      "total_tokens": (len(_last_user_text(body)) + len(content)) // 4},
        }

    # -- serving --------------------------------------------------------------------------
    def start(self, port: int = 0) -> str:
        judge = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, code: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": "test-judge", "object": "model", "owned_by": "fixture"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(200, judge.completion(body))
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

        ThreadingHTTPServer.daemon_threads = True
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        judge = PeerJudge(json.load(f))
    url = judge.start(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    print(f"READY {url}", flush=True)
    done.wait()
    judge.stop()
    print("STATS " + json.dumps(judge.stats), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
