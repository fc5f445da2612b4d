"""The local stand-in for EMR Serverless's compute: job runs of Spark actors, in Spark local mode.

A dispatcher's `StartJobRun` reaches moto (patched by `asya_local.endpoint.moto_emr`), which hands the new run
here. The run executes the same entry script EMR Serverless would (`spark_emr/entry.py`) with the
same arguments, except that its S3 input is copied to a local file and its output folder is local,
then copied back to S3 when the job succeeds: PyPI's PySpark has no S3 connector. The actor's code
comes from the asset the run names in `--py-files` (mapped back to its folder), the core from this
checkout, and its declared libraries (built for this machine) from the stack. Runs go one at a time
(a laptop's two cores are the application's whole capacity); their state moves `SUBMITTED` →
`RUNNING` → `SUCCESS` / `FAILED` / `CANCELLED` as on AWS, and the collectors' reconciliation schedule
picks the ended ones up. A run works with a session of its job
run's execution role, as on EMR Serverless: the S3 copies are made with it, and the job's process gets
it, so a job role without its grants fails here too.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from moto.core.utils import utcnow
from moto.emrserverless.models import JobRun

from asya_cdk.sources import shipped
from asya_local.endpoint.moto_emr import apply_emr_fix
from asya_local.roles import EMR_SERVERLESS, local_client, role_environment

JOB_PACKAGES = ("asya", "asya_spark_job")  # what the job's archive holds besides libraries (asya_cdk.spark)
MASTER = "local[2]"
_TAIL_LINES = 40


def _s3_location(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


class LocalSparkRunner:
    """Runs job runs one at a time in a background thread; `add_code` tells it where assets came from."""

    def __init__(self, endpoint: str, on_line: Callable[[str, str], None] = lambda _source, _line: None) -> None:
        self.endpoint = endpoint
        self.on_line = on_line
        self.code_dirs: dict[str, Path] = {}
        self.libraries: dict[str, list[Path]] = {}
        self._runs: queue.Queue[JobRun | None] = queue.Queue()
        self._process: subprocess.Popen[str] | None = None
        self._running: JobRun | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="asya-spark-runner", daemon=True)
        self._thread.start()

    def add_code(self, code_dirs: dict[str, Path]) -> None:
        self.code_dirs.update(code_dirs)

    def add_libraries(self, libraries: dict[str, list[Path]]) -> None:
        """Each Spark actor's declared libraries, built for this machine, by its application's name."""
        self.libraries.update(libraries)

    def submit(self, job_run: JobRun) -> None:
        self._runs.put(job_run)

    def cancel(self, job_run: JobRun) -> None:
        with self._lock:
            if self._running is job_run and self._process is not None:
                self._process.kill()

    def stop(self) -> None:
        """Stop the running job and drop the queued ones (they stay `SUBMITTED`): the stack stops."""
        while not self._runs.empty():
            self._runs.get_nowait()
        with self._lock:
            if self._process is not None:
                self._process.kill()

    def close(self) -> None:
        """Stop, and end the runner's thread: its endpoint is gone."""
        self.stop()
        self._runs.put(None)

    def _work(self) -> None:
        while (job_run := self._runs.get()) is not None:
            if job_run.state != "SUBMITTED":
                continue  # canceled while it waited
            try:
                self._run(job_run)
            except Exception as exc:  # noqa: BLE001 - the run fails; the runner keeps serving the others
                self._end(job_run, "FAILED", f"local runner: {type(exc).__name__}: {exc}", time.monotonic())

    def _run(self, job_run: JobRun) -> None:
        started = time.monotonic()
        job_run.state = "RUNNING"
        job_run.updated_at = utcnow()
        driver: Any = (job_run.job_driver or {})["sparkSubmit"]
        arguments = list(driver.get("entryPointArguments", []))
        credentials = role_environment(
            self._admin_client, job_run.execution_role_arn, EMR_SERVERLESS, f"job-run-{job_run.id}"
        )
        s3 = local_client("s3", self.endpoint, credentials)
        with tempfile.TemporaryDirectory(prefix="asya-spark-") as folder:
            work = Path(folder)
            input_at = arguments.index("--input") + 1
            bucket, key = _s3_location(arguments[input_at])
            s3.download_file(bucket, key, str(work / "input.jsonl"))
            arguments[input_at] = str(work / "input.jsonl")
            output_at = arguments.index("--output") + 1
            output_uri, arguments[output_at] = arguments[output_at], str(work / "output")
            own = self.libraries.get(_application_name(job_run), [])
            core = shipped(*JOB_PACKAGES)
            python_path = [*self._code_for(str(driver.get("sparkSubmitParameters", ""))), *own, core]
            command = [sys.executable, str(core / "asya_spark_job" / "entry.py"), *arguments, "--master", MASTER]
            environment = {
                **os.environ,
                **credentials,
                "AWS_ENDPOINT_URL": self.endpoint,
                "PYTHONPATH": os.pathsep.join(str(path) for path in python_path),
            }
            tail: deque[str] = deque(maxlen=_TAIL_LINES)
            with self._lock:
                self._running = job_run
                self._process = subprocess.Popen(
                    command, cwd=folder, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                )
                process = self._process
            assert process.stdout is not None
            for line in process.stdout:
                tail.append(line.rstrip())
            code = process.wait()
            with self._lock:
                self._running, self._process = None, None
            if job_run.state == "CANCELLED":
                return
            if code != 0:
                self._end(job_run, "FAILED", _failure(tail, code), started)
                return
            bucket, prefix = _s3_location(output_uri)
            for file in sorted((work / "output").rglob("*")):
                if file.is_file() and not file.name.endswith(".crc"):
                    s3.upload_file(str(file), bucket, prefix + str(file.relative_to(work / "output")))
        self._end(job_run, "SUCCESS", "", started)

    def _admin_client(self, service: str) -> Any:
        return local_client(service, self.endpoint)

    def _code_for(self, submit_parameters: str) -> list[Path]:
        """The actor folders behind the run's `--py-files` assets."""
        words = submit_parameters.split()
        folders = []
        for index, word in enumerate(words[:-1]):
            if word == "--py-files":
                for uri in words[index + 1].split(","):
                    folder = self.code_dirs.get(_s3_location(uri)[1])
                    if folder is not None:
                        folders.append(folder)
        return folders

    def _end(self, job_run: JobRun, state: str, details: str, started: float) -> None:
        job_run.state = state
        job_run.state_details = details or None
        job_run.total_execution_duration_seconds = max(1, round(time.monotonic() - started))
        job_run.updated_at = utcnow()
        self.on_line("spark", f"job run {job_run.id} ({job_run.name}) {state} in {time.monotonic() - started:.1f} s")


def _application_name(job_run: JobRun) -> str:
    from moto.emrserverless.models import emrserverless_backends

    region, account = job_run.arn.split(":")[3:5]
    return str(emrserverless_backends[account][region].applications[job_run.application_id].name)


def _failure(tail: deque[str], code: int) -> str:
    """The last error line the job printed (a Python exception, or Spark's), for `stateDetails`."""
    for line in reversed(tail):
        if "Error" in line or "Exception" in line:
            return line.strip()[:1000]
    return f"the job exited with code {code}"


_runner: LocalSparkRunner | None = None


def local_spark_runner(endpoint: str, on_line: Callable[[str, str], None] | None = None) -> LocalSparkRunner:
    """The process's runner (moto's state, job runs included, is per process), registered with moto."""
    global _runner
    if _runner is None or _runner.endpoint != endpoint:
        if _runner is not None:
            _runner.close()
        _runner = LocalSparkRunner(endpoint)
        apply_emr_fix(_runner)
    if on_line is not None:
        _runner.on_line = on_line
    return _runner
