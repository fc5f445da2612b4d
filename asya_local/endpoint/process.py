"""The local AWS endpoint (`asya_local.endpoint.server`) as a process of its own, started and stopped by
whoever needs one (a local stack, a test session, a bench), and the loopback ports it and the stack take."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asya_local import admin_key
from asya_local.endpoint.server import ADMIN, READY

ENDPOINT_START_SECONDS = 60.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_taken(port: int) -> bool:
    """Whether something already listens on `port` of loopback (a second stack would wait for its
    endpoint there in vain)."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class LocalEndpoint:
    """The local AWS endpoint (`asya_local.endpoint.server`) on loopback, as a process of its own, from a clean
    state: moto with the fixes the local stack relies on, enforcing IAM (unless `ASYA_LOCAL_IAM=off`):
    only the administrator (`admin_credentials`, a secret of its own: `asya_local.admin_key`) and
    sessions of deployed roles are let in, each as
    far as its policies allow. Stacks that must coexist (a test session's) share one endpoint, each
    deploying under its own names. `on_line` gets the lines of the Spark jobs it runs."""

    port: int
    on_line: Callable[[str, str], None] = lambda _source, _line: None
    env: dict[str, str] = field(default_factory=dict)  # variables of its own, over this process's
    admin_credentials: dict[str, str] = field(default_factory=admin_key.new_credentials, repr=False)
    _process: subprocess.Popen[str] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LocalEndpoint:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self) -> None:
        admin_key.remember(self.url, self.admin_credentials)
        secret = {admin_key.SECRET_VARIABLE: self.admin_credentials["AWS_SECRET_ACCESS_KEY"]}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "asya_local.endpoint.server", str(self.port), str(os.getpid())],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # no `Access-Control-Allow-Origin: *` on every answer: no web page reads the endpoint
            env={**os.environ, "PYTHONUNBUFFERED": "1", "MOTO_DISABLE_GLOBAL_CORS": "true", **secret, **self.env},
            # out of the terminal's process group: its Ctrl-C reaches the stack's process alone, which stops
            # the workers before the endpoint they talk to; the endpoint still ends with the process that
            # started it (`asya_local.functions.parent_watch`)
            start_new_session=True,
        )
        ready = threading.Event()
        threading.Thread(target=self._relay, args=(self._process, ready), daemon=True).start()
        if not ready.wait(ENDPOINT_START_SECONDS) or self._process.poll() is not None:
            self.stop()
            raise RuntimeError(f"the local AWS endpoint on port {self.port} did not start")

    def _relay(self, process: subprocess.Popen[str], ready: threading.Event) -> None:
        """The endpoint's lines: `ready` once it serves (moto's imports and patches take seconds), then
        what its Spark runner says, as `<source>\\t<line>`."""
        assert process.stdout is not None
        for line in process.stdout:
            source, _, text = line.rstrip().partition("\t")
            if source == READY and not text:
                ready.set()
            else:
                self.on_line(source if text else "endpoint", text or source)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
            self._process = None

    def cpu_seconds(self) -> float:
        """CPU time the endpoint's process has used (Linux), for benches."""
        assert self._process is not None
        fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def endpoint_admin(endpoint: str, action: str, body: Any = None) -> Any:
    """One of the local endpoint's own calls (`asya_local.endpoint.server`): Spark code, Spark stop,
    requests, queue ages. Without a body it is a read (GET)."""
    data = None if body is None else json.dumps(body).encode()
    method = "GET" if body is None else "POST"
    request = urllib.request.Request(
        f"{endpoint}{ADMIN}{action}", data=data, method=method, headers=admin_key.headers(endpoint)
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read() or b"null")
