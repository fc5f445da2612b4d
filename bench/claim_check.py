"""Large payloads through the sidecar (`asya.claims`): the time a hop takes and the memory it needs.

For each size, in a process of its own (so its peak memory is its own), in process against moto's S3
and SQS: one hop whose handler makes a payload of that size (the sidecar writes it to S3 and sends a
slim envelope), then the next hop (it reads the payload back, checks its digest, runs a handler that
adds a field, and writes the new payload to S3). Prints the slim message's size, each hop's seconds
and the process's peak resident memory, which includes moto's in-memory copies of the objects (on
AWS they are in S3, so a function needs less).

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
    os.environ.pop("AWS_ENDPOINT_URL", None)
    import boto3
    from moto import mock_aws

    from tests.support.mesh import NS, QUEUES, Mesh, envelope

    with mock_aws():
        sqs = boto3.client("sqs")
        for name in QUEUES:
            sqs.create_queue(QueueName=f"asya-{NS}-{name}")
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        mesh = Mesh(sqs)
        mesh.actor("huge", ASYA_CLAIM_BUCKET=BUCKET, POWERTOOLS_METRICS_DISABLED="true")
        started = time.perf_counter()
        mesh.deliver(envelope({"size": size}))
        first = time.perf_counter() - started
        [slim] = mesh.messages("b")
        mesh.actor("enrich", actor="b", ASYA_CLAIM_BUCKET=BUCKET, POWERTOOLS_METRICS_DISABLED="true")
        started = time.perf_counter()
        mesh.deliver(slim, actor="b")
        second = time.perf_counter() - started
        [onward] = mesh.messages("x-sink")
    assert onward["payload_ref"]["bytes"] > size
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"size": size, "slim": len(json.dumps(slim)), "first": first, "second": second, "peak_mb": peak_mb}


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
