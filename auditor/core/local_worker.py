"""The local model in a child process, so that a call can be stopped at its deadline whatever it is
doing.

Loading the model (importing torch, de-quantising the GGUF file) takes 15-30 s on a busy CPU and
cannot be interrupted; a thread left loading cannot be abandoned safely either (it dies with the
interpreter inside C++ code). A child process can: the caller waits for a reply until the
deadline (plus ``GRACE_S`` once the model is loaded) and returns. The child stops on its own at
the deadline (``auditor.core.local_generate``), answers what it has, and stays loaded for the next
call; it is killed when a request overruns, and left loading when the load does (a retry, or the
next audit, finds it further on). At exit every child is killed.

Run as ``python -m auditor.core.local_worker NAME``; the child speaks JSON lines on its stdin and on
the stdout it had at start (its own prints go to stderr).
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from auditor.core.errors import AuditorError, InputError

GRACE_S = 1.0  # how long past the deadline the caller waits for the child to answer on its own


class LocalModelStopped(Exception):
    """The deadline passed before the child answered; it was killed (``phase`` says where it was)."""

    def __init__(self, phase: str) -> None:
        super().__init__(f"the local model was stopped at the time limit while {phase}")
        self.phase = phase


class LocalWorker:
    """One child process holding one model; calls are served one at a time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._ready = False  # the child said it has loaded the model
        self._lock = threading.Lock()

    def generate(
        self, chat: list[dict[str, str]], max_new_tokens: int, deadline: float | None
    ) -> dict[str, Any]:
        """The child's reply (``auditor.core.local_generate.Generation`` as a dict) to one call."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            if not self._ready:  # a child left loading by an earlier call goes on loading
                self._answer(deadline, "loading the model", grace=0.0, kill=False)
                self._ready = True
            request = {"chat": chat, "max_new_tokens": max_new_tokens, "deadline": deadline}
            assert self._proc is not None and self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")
            self._proc.stdin.flush()
            return self._answer(deadline, "reading the prompt or replying", grace=GRACE_S)

    def stop(self) -> None:
        """Kill the child (it holds no state worth keeping: the model is reloaded on demand)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc, self._buffer, self._ready = None, b"", False

    def _start(self) -> None:
        root = str(Path(__file__).resolve().parents[2])  # the child imports this very package
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
        }
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "auditor.core.local_worker", self.name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            bufsize=0,
        )
        self._buffer, self._ready = b"", False

    def _answer(self, deadline: float | None, phase: str, grace: float, kill: bool = True) -> dict[str, Any]:
        """The child's next line, waited for until ``deadline + grace``. Past that, a child busy
        with a request is killed (its late reply would answer the next one); a loading child is
        left to load for the next call, since a retry would otherwise start it from zero."""
        assert self._proc is not None and self._proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._proc.stdout, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                wait = None if deadline is None else deadline + grace - time.monotonic()
                if wait is not None and (wait <= 0 or not selector.select(wait)):
                    if kill:
                        self.stop()
                    raise LocalModelStopped(phase)
                chunk = os.read(self._proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    code = self._proc.wait()
                    self._proc = None
                    raise AuditorError(f"the local model's process ended (exit {code}) while {phase}")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        reply = json.loads(line)
        if "error" in reply:
            self.stop()
            raise InputError(reply["error"], hint=reply.get("hint"))
        return reply


_workers: dict[str, LocalWorker] = {}
_workers_lock = threading.Lock()


def worker(name: str) -> LocalWorker:
    """The process-wide worker of ``name``, started on first use and killed at exit."""
    with _workers_lock:
        if name not in _workers:
            _workers[name] = LocalWorker(name)
        return _workers[name]


@atexit.register
def _stop_all() -> None:
    for w in list(_workers.values()):
        w.stop()


def serve(name: str) -> None:
    """The child: load, measure the rates, answer one request per line until stdin closes."""
    from dataclasses import asdict

    from auditor.core.local_generate import generate, measure
    from auditor.core.local_model import load_model

    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # libraries' prints must not mix with the replies
    try:
        loaded = load_model(name)
    except InputError as exc:
        out.write(json.dumps({"error": str(exc), "hint": exc.hint}) + "\n")
        return
    rates = measure(loaded)
    out.write(json.dumps({"ready": True, **asdict(rates)}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        result = generate(loaded, rates, request["chat"], request["max_new_tokens"], request["deadline"])
        out.write(json.dumps(asdict(result)) + "\n")


if __name__ == "__main__":
    serve(sys.argv[1])
