"""Where terminal envelopes are kept in S3: one object per envelope and outcome. (A small final
result is kept in its task record instead: `asya_crew.crew`, docs/status.md.)

    results/<namespace>/<envelope id>/succeeded.json   x-sink, the route finished
    results/<namespace>/<envelope id>/failed.json      x-sink, a handled failure
    results/<namespace>/<envelope id>/sump.json        x-sump, an infrastructure error or a redrive

Fan-out children have their own ids (and `parent_id`), so each branch has its own objects. The key
depends only on the envelope and its outcome, and a final result is written once (a conditional
write), so a redelivered envelope finds its result kept instead of writing a second one; only a
paused envelope's object is overwritten, when its task pauses again further on.
"""

from __future__ import annotations

PREFIX = "results"


def result_key(namespace: str, envelope_id: str, outcome: str) -> str:
    return f"{PREFIX}/{namespace}/{envelope_id}/{outcome}.json"


def result_prefix(namespace: str, envelope_id: str) -> str:
    return f"{PREFIX}/{namespace}/{envelope_id}/"
