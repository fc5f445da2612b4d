"""Actors of the chaos mesh. Each records every execution of its handler, one line per
(envelope id, actor, attempt), in the file `CHAOS_LEDGER` names (absent: nothing is recorded),
so that a run can count handlers executed more than once for the same hop.

Which branch fails, and when, depends only on the payload, never on timing, so a run's expected
outcomes are known before it starts."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

LEDGER = "CHAOS_LEDGER"
PARTS = 3  # branches per task, unless its payload asks for more (`parts`: a wide fan-out, `asya.fans`)
FLAKY_EVERY = 3  # a branch with (n + part) % 3 == 0 fails its first attempt at `flaky`
DOOMED_DIGIT = 7  # a branch of a task whose n ends in 7, part 1, always fails at `judge`

Handler = Generator[Any, Any, None]


def record(actor: str) -> Generator[Any, Any, int]:
    """Note this execution in the ledger; the hop's attempt (1 for a first delivery) comes back. The
    hop's place on the route is noted too: a flow program's loop calls one actor on one envelope again,
    each time a hop of its own, not an execution of the same hop."""
    envelope_id = yield ("GET", ".id")
    status = yield ("GET", ".status")
    position = len((yield ("GET", ".route.prev")) or [])
    attempt = int((status or {}).get("attempt", 1))
    path = os.environ.get(LEDGER)
    if path:
        # one short write on an O_APPEND file: lines from concurrent workers never interleave
        with open(path, "a", encoding="utf-8") as ledger:
            ledger.write(f"{envelope_id}\t{actor}\t{attempt}\t{position}\n")
    return attempt


def doomed(payload: dict[str, Any]) -> bool:
    return bool(payload["n"] % 10 == DOOMED_DIGIT and payload["part"] == 1)


def retried(payload: dict[str, Any]) -> bool:
    return bool((payload["n"] + payload["part"]) % FLAKY_EVERY == 0)


def split(payload: dict[str, Any]) -> Handler:
    yield from record("split")
    for part in range(payload.get("parts", PARTS)):
        yield {"n": payload["n"], "part": part}


def flaky(payload: dict[str, Any]) -> Handler:
    attempt = yield from record("flaky")
    if attempt == 1 and retried(payload):
        raise ConnectionError(f"flaky: attempt {attempt} of n={payload['n']} part={payload['part']} failed")
    yield {**payload, "attempts": attempt}


def judge(payload: dict[str, Any]) -> Handler:
    yield from record("judge")
    if doomed(payload):
        raise ValueError(f"judge: n={payload['n']} part={payload['part']} cannot be judged")
    yield {**payload, "judged": True}


def crunch(payload: dict[str, Any]) -> Handler:
    """Runs inside the Spark job."""
    yield from record("crunch")
    yield {**payload, "square": payload["n"] ** 2}


def box(payload: dict[str, Any]) -> Handler:
    """A container actor's: runs in a consumer (`asya.consumer`), not a Lambda function."""
    yield from record("box")
    yield {**payload, "boxed": True}


def post(payload: dict[str, Any]) -> Handler:
    """Counts its rounds: flow `program` calls it in a loop until it has run twice."""
    yield from record("post")
    yield {**payload, "done": True, "rounds": payload.get("rounds", 0) + 1}


def tally(branches: list[Any]) -> Handler:
    """A join collecting failed branches: each branch's part, in order (a failed one's from its error
    payload), so a run can check that every task was joined whole."""
    yield from record("tally")
    parts = [branch.get("part", (branch.get("original_payload") or {}).get("part")) for branch in branches]
    yield {"parts": parts, "failed": sum("error" in branch for branch in branches)}
