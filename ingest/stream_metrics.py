"""Counters and gauges in the Prometheus text format, served on a local HTTP port.

Small on purpose (no client library): the consumer and the audit workers count what they do, and
``GET /metrics`` renders it; ``GET /healthz`` answers the liveness and readiness probes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    esc = {k: v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for k, v in labels.items()}
    body = ",".join(f'{k}="{v}"' for k, v in sorted(esc.items()))
    return "{" + body + "}"


class Metrics:
    """A registry of named series; thread-safe, because the HTTP server reads while workers write."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], float] = {}
        self._kinds: dict[str, tuple[str, str]] = {}

    def describe(self, name: str, kind: str, help_text: str) -> None:
        """Declare a series (kind: counter or gauge) so it renders with HELP and TYPE lines."""
        self._kinds[name] = (kind, help_text)

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        key = (name, _labels(labels))
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        with self._lock:
            self._values[(name, _labels(labels))] = value

    def value(self, name: str, **labels: str) -> float:
        with self._lock:
            return self._values.get((name, _labels(labels)), 0.0)

    def total(self, name: str) -> float:
        """The sum over all label sets of one series."""
        with self._lock:
            return sum(v for (n, _), v in self._values.items() if n == name)

    def render(self) -> str:
        with self._lock:
            values = sorted(self._values.items())
        lines: list[str] = []
        for name, (kind, help_text) in sorted(self._kinds.items()):
            full = f"{self.prefix}_{name}"
            lines += [f"# HELP {full} {help_text}", f"# TYPE {full} {kind}"]
            series = [(lab, v) for (n, lab), v in values if n == name] or [("", 0.0)]
            lines += [f"{full}{lab} {v:g}" for lab, v in series]
        return "\n".join(lines) + "\n"


class MetricsServer:
    """``/metrics`` and ``/healthz`` on 127.0.0.1 (or the host given) in a daemon thread."""

    def __init__(
        self, metrics: Metrics, port: int, host: str = "127.0.0.1", healthy: Callable[[], bool] = lambda: True
    ) -> None:
        registry = metrics

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/metrics"):
                    self._send(200, registry.render(), "text/plain; version=0.0.4")
                elif self.path.startswith("/healthz"):
                    ok = healthy()
                    self._send(200 if ok else 503, "ok\n" if ok else "unhealthy\n", "text/plain")
                else:
                    self._send(404, "not found\n", "text/plain")

            def _send(self, code: int, body: str, ctype: str) -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: object) -> None:  # scrapes every few seconds: keep stderr quiet
                return

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="metrics-http", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
