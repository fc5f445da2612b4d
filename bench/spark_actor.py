"""Envelopes per second through a Spark actor, next to the same handler without Spark.

A Spark actor applies a per-payload handler to a whole staged batch (`mapPartitions` over
`BatchHops.run`) instead of one SQS event at a time. Whether that pays, and from what batch size on,
comes down to the figures the issue asks for, all measured in one run with the trivial handler
`bench.actors.touch` (so what is measured is the machinery around it):

  1. the Spark actor's rate: N small envelopes (`prev: [], curr: hop, next: [post]`) staged as JSON
     lines, run by the real entry script (`asya_spark_job/entry.py` → `asya_spark_job.job.main`) in a
     subprocess with `--master local[2]`, exactly as `asya_local.endpoint.spark_runner` runs a job; timed from
     process start to the output's `_SUCCESS` marker (process exit is shown too). The output must hold
     exactly N routed envelopes, all to `asya-bench-post`, or the benchmark fails.
     "whole run" includes the session start; "steady state" is the whole run minus the fixed cost (3);
  2. the baselines: the handler in a plain Python loop (each body json-decoded first, as the job
     does), and `BatchHops.run` in this process (the full hop pipeline, each output serialized as the
     job serializes it, without Spark);
  3. the fixed cost of one batch: the same subprocess with a batch of 1 envelope;
  4. the ratios of the Spark steady-state rate to both baselines.
Every figure is the median of `--rounds` runs (the Spark lines show their range too), after one
unreported warm-up job: a Spark session's start varies by a second or more from one run to the next on
a small machine (the first job of a series was the slowest in trials), and the steady state is a
difference of two such timings.

    python -m bench.spark_actor [--envelopes 200000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from asya.batch import BatchHops, Routed, staged_record
from asya.config import SidecarConfig
from bench.actors import touch

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ROOT / "spark_emr" / "asya_spark_job" / "entry.py"
PYTHON_PATH = [ROOT / "sidecar_layer", ROOT / "spark_emr", ROOT]  # the core, the job, the handler's folder
MASTER = "local[2]"
ACTOR = "hop"
ACTOR_ENV = {"ASYA_NAMESPACE": "bench", "ASYA_ACTOR_NAME": ACTOR, "ASYA_HANDLER": "bench.actors.touch"}
EXPECTED_QUEUE = "asya-bench-post"
_TAIL_CHARS = 3000


class BenchmarkError(RuntimeError):
    """The run did not do the work it claims to measure."""


@dataclass(frozen=True, slots=True)
class JobTiming:
    output_written: float  # seconds from process start to the `_SUCCESS` marker
    process_exit: float  # seconds from process start to exit (includes `spark.stop()`)


def envelope_body(index: int) -> str:
    envelope = {
        "id": f"bench-{index:08d}",
        "route": {"prev": [], "curr": ACTOR, "next": ["post"]},
        "headers": {},
        "payload": {"n": index, "text": "the quick brown fox", "score": 0.5},
    }
    return orjson.dumps(envelope).decode()


def staged_batch(envelopes: int) -> list[tuple[str, str]]:
    """(message id, body) records, as the dispatcher stages them."""
    return [(f"m-{index:08d}", envelope_body(index)) for index in range(envelopes)]


def write_batch(records: Iterable[tuple[str, str]], path: Path) -> None:
    path.write_text("".join(staged_record(message_id, body) + "\n" for message_id, body in records))


def run_job(input_path: Path, output_path: Path, folder: Path) -> JobTiming:
    """The entry script in a subprocess, as the local stack's runner starts it."""
    arguments = ["--input", str(input_path), "--output", str(output_path)]
    arguments += ["--actor-env", orjson.dumps(ACTOR_ENV).decode(), "--master", MASTER]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(str(path) for path in PYTHON_PATH)}
    started_wall, started = time.time(), time.perf_counter()
    process = subprocess.run(
        [sys.executable, str(ENTRY), *arguments],
        cwd=folder,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    exited = time.perf_counter() - started
    if process.returncode != 0:
        raise BenchmarkError(f"the job exited with code {process.returncode}:\n{process.stdout[-_TAIL_CHARS:]}")
    marker = output_path / "_SUCCESS"
    if not marker.is_file():
        raise BenchmarkError(f"the job exited 0 but wrote no {marker}")
    return JobTiming(marker.stat().st_mtime - started_wall, exited)


def read_output(output_path: Path) -> list[Routed]:
    routed: list[Routed] = []
    for part in sorted(output_path.glob("part-*")):
        with part.open("rb") as lines:
            routed.extend(Routed.from_json(line) for line in lines if line.strip())
    return routed


def verify(routed: list[Routed], records: list[tuple[str, str]], where: str) -> None:
    """Exactly one envelope per record, each forwarded to the next actor: anything else is a failure."""
    if len(routed) != len(records):
        raise BenchmarkError(f"{where}: {len(records)} envelopes in, {len(routed)} routed lines out")
    strays = [out for out in routed if out.queue != EXPECTED_QUEUE]
    if strays:
        raise BenchmarkError(f"{where}: {len(strays)} envelopes not sent to {EXPECTED_QUEUE}, e.g. {strays[0]}")
    if {out.message_id for out in routed} != {message_id for message_id, _ in records}:
        raise BenchmarkError(f"{where}: the routed envelopes do not come one from each input record")


def spark_run(records: list[tuple[str, str]]) -> JobTiming:
    """One Spark actor batch of `records`, verified."""
    with tempfile.TemporaryDirectory(prefix="asya-bench-spark-") as name:
        folder = Path(name)
        write_batch(records, folder / "input.jsonl")
        timing = run_job(folder / "input.jsonl", folder / "output", folder)
        verify(read_output(folder / "output"), records, f"Spark job of {len(records)}")
    return timing


@dataclass(frozen=True, slots=True)
class SparkTimings:
    """Several runs of one batch; the figures reported are their medians."""

    runs: tuple[JobTiming, ...]

    @property
    def output_written(self) -> float:
        return statistics.median(run.output_written for run in self.runs)

    @property
    def process_exit(self) -> float:
        return statistics.median(run.process_exit for run in self.runs)

    @property
    def spread(self) -> str:
        seconds = sorted(run.output_written for run in self.runs)
        return f"{seconds[0]:.2f}-{seconds[-1]:.2f} s"


def spark_timings(records: list[tuple[str, str]], rounds: int) -> SparkTimings:
    return SparkTimings(tuple(spark_run(records) for _ in range(rounds)))


def timed(work: Callable[[], Any]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def plain_loop_rate(records: list[tuple[str, str]]) -> float:
    """`handler(payload)` per body, the body json-decoded first."""

    def loop() -> None:
        for _, body in records:
            touch(orjson.loads(body)["payload"])

    return len(records) / timed(loop)


def batch_hops_rate(hops: BatchHops, records: list[tuple[str, str]]) -> float:
    """`BatchHops.run` over the batch in this process, each output serialized as the job does."""
    routed: list[Routed] = []

    def run() -> None:
        for out in hops.run(records):
            out.to_json()
            routed.append(out)

    elapsed = timed(run)
    verify(routed, records, "BatchHops.run")
    return len(records) / elapsed


def in_process_hops() -> BatchHops:
    """The pipeline a Spark worker builds, with the job's settings (no metrics, warnings only)."""
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    return BatchHops(SidecarConfig.from_env(ACTOR_ENV))


@dataclass(frozen=True, slots=True)
class Results:
    envelopes: int
    rounds: int
    whole: SparkTimings  # the Spark actor on the whole batch
    fixed: SparkTimings  # the Spark actor on a batch of 1
    loop: float  # envelopes/s of the plain loop
    in_process: float  # envelopes/s of `BatchHops.run` in this process

    @property
    def steady(self) -> float | None:
        """Envelopes/s of the Spark actor beyond its fixed cost; None if the run was no longer than it."""
        seconds = self.whole.output_written - self.fixed.output_written
        return self.envelopes / seconds if seconds > 0 else None


def print_report(results: Results) -> None:
    whole, fixed, steady = results.whole, results.fixed, results.steady
    print(
        f"{results.envelopes:,} envelopes of {len(envelope_body(0))} bytes, handler {ACTOR_ENV['ASYA_HANDLER']}, "
        f"Spark {MASTER}, median of {results.rounds} rounds"
    )
    print(
        f"Spark actor, whole run         {results.envelopes / whole.output_written:12,.0f} envelopes/s  "
        f"({whole.output_written:.2f} s to output, range {whole.spread}; {whole.process_exit:.2f} s to exit)"
    )
    if steady is None:
        print(f"Spark actor, steady state      {'n/a':>12}  (the run took no longer than the fixed cost)")
    else:
        seconds = whole.output_written - fixed.output_written
        print(f"Spark actor, steady state      {steady:12,.0f} envelopes/s  ({seconds:.2f} s beyond fixed)")
    print(f"plain loop (loads + handler)   {results.loop:12,.0f} envelopes/s")
    print(f"BatchHops.run in process       {results.in_process:12,.0f} envelopes/s")
    print(
        f"fixed cost of a batch of 1     {fixed.output_written:12.2f} s to output  "
        f"(range {fixed.spread}; {fixed.process_exit:.2f} s to exit)"
    )
    if steady is not None:
        print(f"Spark steady / plain loop      {steady / results.loop:12.4f}")
        print(f"Spark steady / BatchHops.run   {steady / results.in_process:12.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envelopes", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3, help="the median of this many runs is reported")
    arguments = parser.parse_args()
    if arguments.envelopes < 1 or arguments.rounds < 1:
        parser.error("--envelopes and --rounds must be at least 1")
    records = staged_batch(arguments.envelopes)
    spark_run(records[:1])  # warm-up, not reported (see the module docstring)
    fixed = spark_timings(records[:1], arguments.rounds)
    whole = spark_timings(records, arguments.rounds)
    loop = statistics.median(plain_loop_rate(records) for _ in range(arguments.rounds))
    hops = in_process_hops()
    in_process = statistics.median(batch_hops_rate(hops, records) for _ in range(arguments.rounds))
    print_report(Results(arguments.envelopes, arguments.rounds, whole, fixed, loop, in_process))


if __name__ == "__main__":
    main()
