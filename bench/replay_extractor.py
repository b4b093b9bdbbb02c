"""A stand-in for an extraction model: an OpenAI-compatible /v1/chat/completions server on loopback that answers
each event with facts given in advance, as the extractor's output. bench/locomo.py's `pipeline` mode
replays LoCoMo's observations through it, so the whole extraction pipeline (queue, worker, guards, write path)
runs on real data without a model.

    with ReplayExtractor({"<event text>": [{"text": ..., "category": "", "confidence": 0.9}, ...]}) as server:
        settings.HAKI_EXTRACTOR_URL = server.url

An event it has no answer for gets []. It reads the event from the request as ingest/extraction.py sends it (the
user message's text after "Event:\\n").
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EVENT_MARK = "Event:\n"


class ReplayExtractor:
    def __init__(self, answers: dict[str, list[dict]]):
        self.answers = answers
        self.requests = 0
        self.unknown = 0
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                event = prompt.split(EVENT_MARK, 1)[1] if EVENT_MARK in prompt else ""
                replay.requests += 1
                items = replay.answers.get(event)
                if items is None:
                    replay.unknown += 1
                payload = json.dumps(
                    {
                        "object": "chat.completion",
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": json.dumps(items or [])},
                            }
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1/chat/completions"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> ReplayExtractor:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
