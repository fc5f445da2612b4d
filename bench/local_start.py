"""How long `asya up` takes to start a mesh: from nothing to the gateway answering, phase by phase.

Each run starts the local stack for the mesh from scratch in a process of its own, as `asya up` does
(a new endpoint, the CDK's JavaScript runtime, a synth, a deploy, the workers), and stops it. Phases
are timed from the stack's own progress lines, so the numbers say where the time goes. With `--cold`
every run starts with empty caches (the mesh's and uv's), so it installs every library the mesh's
functions need, as a first `asya up` on a new machine does.

    python -m bench.local_start [--mesh examples/reviews/mesh.yaml] [--runs 3] [--cold]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from asya_cdk.loading import load_mesh
from asya_local.endpoint.process import free_port
from asya_local.stack import LocalStack

ROOT = Path(__file__).resolve().parents[1]
MESH = ROOT / "examples" / "reviews" / "mesh.yaml"


def one_start(mesh_path: Path) -> tuple[float, list[tuple[str, float]]]:
    """Seconds to a started stack, and each phase's seconds (named by the progress line that began it)."""
    marks: list[tuple[str, float]] = []
    stack = LocalStack(load_mesh(mesh_path), port=free_port())
    started = time.perf_counter()
    try:
        stack.start(lambda step: marks.append((step, time.perf_counter())))
        total = time.perf_counter() - started
    finally:
        stack.stop()
    ends = [at for _, at in marks[1:]] + [started + total]
    return total, [(step.split(" on ")[0][:48], end - at) for (step, at), end in zip(marks, ends, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", type=Path, default=MESH)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="every run with empty library caches")
    parser.add_argument("--one", action="store_true", help="one start in this process; print it as JSON")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_start(args.mesh)))
        return
    totals = []
    for run in range(args.runs):
        command = [sys.executable, "-m", "bench.local_start", "--one", "--mesh", str(args.mesh)]
        with tempfile.TemporaryDirectory(prefix="asya-bench-cache-") as empty:
            caches = {"ASYA_CACHE": f"{empty}/asya", "UV_CACHE_DIR": f"{empty}/uv"} if args.cold else {}
            environment = {**os.environ, **caches}
            done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT, env=environment)
        total, phases = json.loads(done.stdout.strip().splitlines()[-1])
        totals.append(total)
        shown = ", ".join(f"{step} {seconds:.1f}" for step, seconds in phases)
        print(f"run {run + 1}: {total:.1f} s  ({shown})", flush=True)
    which = "cold caches" if args.cold else "warm caches after the first run"
    print(f"start ({which}): median {statistics.median(totals):.1f} s, min {min(totals):.1f} s over {args.runs} runs")


if __name__ == "__main__":
    main()
