"""The kernel's client for its own server never sends the server's token to a proxy."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from hpc_magics.server.client import ServerConnection


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[str]

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization", ""))
        body = json.dumps({"ok": True}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    handler = type("Server", (_Recorder,), {"seen": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", handler.seen
    httpd.shutdown()


@pytest.fixture
def proxy() -> Iterator[tuple[str, list[bytes]]]:
    """A listening socket standing in for a proxy: it records whatever connects to it."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    got.append(conn.recv(4096))
                except OSError:
                    got.append(b"")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", got
    stop.set()
    thread.join(2)
    listener.close()


def test_the_token_goes_to_the_server_never_to_a_proxy(
        server: tuple[str, list[str]], proxy: tuple[str, list[bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    url, seen = server
    proxy_url, proxied = proxy
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy_url)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    answer = ServerConnection(url, "secret-token").request("GET", "hpc-magics/server")
    assert answer == {"ok": True}
    assert seen == ["token secret-token"]
    assert proxied == [], "the request went to the proxy"
