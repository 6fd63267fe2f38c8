"""A local web server for the browser tests' own pages: each test module writes the pages it needs (a slow
fetch, a form with shadowing controls, a script to cover) and serves them from a thread for the module's
lifetime. One home for the server plumbing, so a test reads as its pages and its assertions."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HTML = "text/html; charset=utf-8"


class PageHandler(BaseHTTPRequestHandler):
    """Base handler: ``reply`` sends one complete response; request logging stays off the test output."""

    def reply(self, body: bytes, content_type: str = HTML, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free local port; yields the base URL (no trailing slash)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
