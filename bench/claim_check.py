"""Large payloads through the sidecar (`asya.claims`): the time a hop takes and the memory it needs.

For each size, in a process of its own (so its peak memory is its own), an in-process mesh against
moto's S3 and SQS (`asya_local.testing.inprocess`): `grow` makes a payload of that size (its sidecar writes
it to S3 and sends a slim envelope), `mark` reads it back, checks its digest, adds a field and writes
the new payload to S3 on its way to x-sink. Prints the size of the slim message x-sink gets, each
hop's seconds and the process's peak resident memory, which includes moto's in-memory copies of
both objects and of the messages (on AWS they are in S3 and SQS, so a function needs less).

    python -m bench.claim_check [--sizes 1000000,10000000,100000000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

BUCKET = "bench-claims"


def one(size: int) -> dict[str, Any]:
    """One size, in this process: the two hops' seconds, the slim message and the peak memory."""
    os.environ.update(AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    os.environ.update(POWERTOOLS_METRICS_DISABLED="true", POWERTOOLS_LOG_LEVEL="ERROR")
    os.environ.pop("AWS_ENDPOINT_URL", None)
    import boto3

    from asya_local.testing.inprocess import InProcessMesh

    seconds: dict[str, float] = {}
    env = {"ASYA_CLAIM_BUCKET": BUCKET}
    with InProcessMesh("bench", {"grow": "bench.actors.grow", "mark": "bench.actors.mark"}, env) as mesh:
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        for actor in ("grow", "mark"):
            mesh.functions[actor] = _timed(mesh.functions[actor], actor, seconds)
        mesh.send(["grow", "mark"], {"size": size})
        mesh.run_until_idle()
        [onward] = mesh.drain("x-sink")
    assert onward["payload_ref"]["bytes"] > size
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    slim = len(json.dumps(onward))
    return {"size": size, "slim": slim, "first": seconds["grow"], "second": seconds["mark"], "peak_mb": peak_mb}


def _timed(function: Any, actor: str, seconds: dict[str, float]) -> Any:
    def timed(event: dict[str, Any], context: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(event, context)
        finally:
            seconds[actor] = seconds.get(actor, 0.0) + time.perf_counter() - started

    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000,10000000,100000000", help="payload bytes, comma-separated")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process measuring one size
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one)))
        return
    print(f"{'payload':>12} {'slim message':>13} {'write hop s':>12} {'read+write hop s':>17} {'peak RSS MB':>12}")
    for size in (int(text) for text in args.sizes.split(",")):
        child = subprocess.run(
            [sys.executable, "-m", "bench.claim_check", "--one", str(size)],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(child.stdout.strip().splitlines()[-1])
        hops = f"{row['first']:>12.2f} {row['second']:>17.2f}"
        print(f"{row['size']:>12,} {row['slim']:>13,} {hops} {row['peak_mb']:>12,.0f}")


if __name__ == "__main__":
    main()
