"""The long hop: rebuilding a product's search index from its scored reviews, a step that takes
minutes in real use (`REINDEX_SECONDS`, 300 in the mesh file; the tests and the bench set seconds).

It is longer than its queue's visibility timeout on purpose. A Lambda actor could not take it past
15 minutes; as a container actor, the consumer's heartbeats keep its message hidden while it runs,
so no other consumer receives it meanwhile and it runs once (docs/containers.md, "Heartbeats").
"""

from __future__ import annotations

import os
import time
from typing import Any

STEPS = 10  # progress is logged this many times per hop


def rebuild(batch: dict[str, Any]) -> dict[str, Any]:
    seconds = float(os.environ.get("REINDEX_SECONDS", "300"))
    started = time.monotonic()
    for step in range(1, STEPS + 1):
        time.sleep(seconds / STEPS)  # stands in for embedding and writing one slice of the index
        print(f"reindex {batch.get('product', '?')}: {step}/{STEPS}", flush=True)
    indexed = [review["id"] for review in batch.get("reviews", [])]
    return {**batch, "indexed": indexed, "reindex_seconds": round(time.monotonic() - started, 1)}
