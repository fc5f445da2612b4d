"""The local stack: the whole mesh on this machine, against a local AWS endpoint.

1. A moto server on loopback is the AWS endpoint (with the SQS depth fix applied first).
2. The mesh's CDK stack is synthesized and deployed into it (`asya_local.deploy`).
3. Every event source mapping gets its own worker process (`asya_local.esm`) that invokes the real
   handler (sidecar + user code, or crew) with the function's deployed environment.

Workers are separate processes, like Lambda execution environments: handlers run in their main
thread (so time limits stop them), user modules cannot collide, and two cores are used.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import boto3
from botocore.config import Config

from asya_cdk.config import LoadedMesh
from asya_local.deploy import (
    LocalFunction,
    deploy,
    deployed_functions,
    publish_assets,
    synthesize,
    take_over_event_sources,
)
from asya_local.lambda_shapes import REGION

LAYER_DIR = Path(__file__).resolve().parents[1] / "sidecar_layer"
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "asya-local", "AWS_SECRET_ACCESS_KEY": "asya-local"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def local_client(service: str, endpoint: str) -> Any:
    """A boto3 client for the local endpoint, with the local stack's credentials and region."""
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        config=Config(retries={"mode": "standard", "max_attempts": 5}),
    )


def queue_depths(sqs: Any, namespace: str) -> dict[str, tuple[int, int, int]]:
    """Visible, in flight and delayed messages for every queue of the namespace."""
    depths = {}
    for url in sqs.list_queues(QueueNamePrefix=f"asya-{namespace}-").get("QueueUrls", []):
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        depths[url.rsplit("/", 1)[-1]] = (
            int(attributes["ApproximateNumberOfMessages"]),
            int(attributes["ApproximateNumberOfMessagesNotVisible"]),
            int(attributes["ApproximateNumberOfMessagesDelayed"]),
        )
    return depths


@dataclass
class LocalStack:
    """`with LocalStack(mesh) as stack:` — the mesh runs until the block ends."""

    mesh: LoadedMesh
    port: int = 4566
    workers_per_function: int = 1
    on_line: Callable[[str, str], None] = lambda _source, _line: None
    outputs: dict[str, str] = field(default_factory=dict)
    functions: list[LocalFunction] = field(default_factory=list)
    _server: Any = None
    _processes: list[tuple[str, subprocess.Popen[str]]] = field(default_factory=list)
    _stopping: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)  # spawning (after a crash) vs stopping

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def namespace(self) -> str:
        return self.mesh.config.namespace

    @property
    def results_bucket(self) -> str:
        return self.outputs["ResultsBucket"]

    def client(self, service: str) -> Any:
        return local_client(service, self.endpoint)

    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self, progress: Callable[[str], None] = lambda _step: None) -> None:
        from moto.server import ThreadedMotoServer

        from asya_local.moto_sqs import apply_depth_fix

        progress(f"starting the local AWS endpoint on {self.endpoint}")
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        # Queue policies and alarms have no local effect; moto says so once per resource otherwise.
        warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)
        logging.getLogger("moto").setLevel(logging.ERROR)
        apply_depth_fix()
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        # moto's state is per process: a stack started earlier in this process must not show through
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST"), timeout=10)
        try:
            progress("synthesizing the CDK app")
            synthesized = synthesize(self.mesh)
            progress(f"deploying stack {synthesized.stack_name}")
            publish_assets(self.client("s3"), synthesized)
            self.outputs = deploy(self.client("cloudformation"), synthesized)
            self.functions = deployed_functions(self.client("lambda"), self.client("sqs"), synthesized)
            take_over_event_sources(self.client("lambda"))
            progress(f"starting {len(self.functions)} event source mappings")
            for function in self.functions:
                workers = min(self.workers_per_function, function.max_concurrency or self.workers_per_function)
                for _ in range(max(1, workers)):
                    self._spawn(function)
        except BaseException:
            self.stop()
            raise

    def _spawn(self, function: LocalFunction) -> None:
        environment = {
            **function.environment,
            **LOCAL_CREDENTIALS,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_LAMBDA_FUNCTION_NAME": function.name,
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
        }
        spec = {
            "function": function.name,
            "handler": function.handler,
            "environment": environment,
            "timeout": function.timeout,
            "memory": function.memory,
            "queue_url": function.queue_url,
            "batch_size": function.batch_size,
            "batching_window": function.batching_window,
            "python_path": [str(function.code_dir), str(LAYER_DIR)],
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "asya_local.esm", json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=str(function.code_dir),
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        source = function.name.removeprefix(f"asya-{self.namespace}-")
        with self._lock:
            if self._stopping:  # a replacement started while the stack stops: end it at once
                process.terminate()
                return
            self._processes.append((source, process))
        threading.Thread(target=self._relay, args=(function, source, process), daemon=True).start()

    def _relay(self, function: LocalFunction, source: str, process: subprocess.Popen[str]) -> None:
        """Pass the worker's lines on; if it dies while the stack runs, start a new one, as Lambda
        starts a new execution environment after a crash."""
        assert process.stdout is not None
        for line in process.stdout:
            self.on_line(source, line.rstrip())
        code = process.wait()
        if not self._stopping:
            self.on_line(source, f"execution environment exited with code {code}; starting a new one")
            self._spawn(function)

    def queue_depths(self) -> dict[str, tuple[int, int, int]]:
        return queue_depths(self.client("sqs"), self.namespace)

    def wait_until_idle(self, timeout: float, settle: float = 1.5, on_tick: Callable[[], None] | None = None) -> bool:
        """True once every queue has stayed empty (nothing visible, in flight or delayed) for `settle` s."""
        deadline = time.monotonic() + timeout
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            if on_tick is not None:
                on_tick()
            busy = any(sum(depth) for depth in self.queue_depths().values())
            now = time.monotonic()
            quiet_since = None if busy else (quiet_since or now)
            if quiet_since is not None and now - quiet_since >= settle:
                return True
            time.sleep(0.25)
        return False

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
        for _, process in self._processes:
            if process.poll() is None:
                process.terminate()
        for _, process in self._processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self._processes.clear()
        if self._server is not None:
            self._server.stop()
            self._server = None
