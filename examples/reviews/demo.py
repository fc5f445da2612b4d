"""Run the review-triage pipeline in one process against moto's in-memory AWS and print the results.

python -m examples.reviews.demo
"""

from __future__ import annotations

import os
import time
from typing import Any

from asya_local.inprocess import InProcessMesh

HANDLERS = {
    "split": "examples.reviews.actors.split",
    "score": "examples.reviews.actors.SentimentModel.score",
    "triage": "examples.reviews.actors.triage",
    "escalate": "examples.reviews.actors.escalate",
}
ROUTE = ["split", "score", "triage"]
CATALOGUE = [
    {"product": "kettle-9", "reviews": ["Great kettle, love it", "Arrived broken, terrible, want a refund", "ok"]},
    {"product": "lamp-2", "reviews": ["Sturdy and fast delivery. Recommend!", "Bad light, slow shipping"]},
    {"product": "mug-5", "reviews": []},
]


def main() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    with InProcessMesh("demo", HANDLERS) as mesh:
        for item in CATALOGUE:
            mesh.send(ROUTE, item)
        started = time.perf_counter()
        batches = mesh.run_until_idle()
        elapsed = time.perf_counter() - started
        results = mesh.drain("x-sink")
        failures = mesh.drain("x-sump")
    print(f"{len(CATALOGUE)} products in, {len(results)} envelopes out, {batches} batches, {elapsed:.2f}s\n")
    for envelope in sorted(results, key=_order):
        print(_describe(envelope))
    if failures:
        print(f"\n{len(failures)} envelope(s) in x-sump")
        raise SystemExit(1)


def _order(envelope: dict[str, Any]) -> tuple[str, int]:
    payload = envelope["payload"]
    return str(payload.get("product")), int(payload.get("review", 0))


def _describe(envelope: dict[str, Any]) -> str:
    payload, route = envelope["payload"], envelope["route"]
    hops = " → ".join([*route["prev"], route["curr"]] if route["curr"] else route["prev"])
    if "action" not in payload:
        return f"  {payload['product']:<9} (no reviews)         {envelope['status']['phase']:<9} via {hops}"
    extra = f" ticket {payload['ticket']}" if "ticket" in payload else ""
    return (
        f"  {payload['product']:<9} review {payload['review']}  {payload['sentiment']:<8} → {payload['action']:<8}"
        f" {envelope['status']['phase']:<9} via {hops}{extra}"
    )


if __name__ == "__main__":
    main()
