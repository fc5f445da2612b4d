"""Actors of the integration-test mesh. `flaky` fails until its third attempt; `crash` kills its
execution environment (like an out-of-memory error), so only SQS redrive can save its messages;
`stuck` never returns to the interpreter, so only Lambda's function timeout ends it."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Generator, Iterator
from typing import Any


def prep(payload: dict[str, Any]) -> dict[str, Any]:
    time.sleep(payload.get("prep_seconds", 0))  # a task a follower is sure to join before it ends
    return {**payload, "prepped": True}


def infer(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "label": "even" if payload["n"] % 2 == 0 else "odd"}


def polish(payload: dict[str, Any]) -> dict[str, Any]:
    """One more round of the `polishing` program's loop."""
    return {**payload, "rounds": payload.get("rounds", 0) + 1}


def post(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "done": True}


def fan(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for part in range(payload["parts"]):
        yield {
            "part": part,
            "sleep": payload.get("sleep", 0),
            **({"blob": payload["blob"]} if "blob" in payload else {}),
            **({"fail": payload["fail"]} if "fail" in payload else {}),
            **({"twice": payload["twice"]} if "twice" in payload else {}),
        }


def slow(payload: dict[str, Any]) -> dict[str, Any]:
    time.sleep(payload.get("sleep", 0))
    return payload


def boom(payload: Any) -> Any:
    """Fails, unless the file `fixed_when` names exists: the fix a test makes before a redrive."""
    fixed_when = payload.get("fixed_when") if isinstance(payload, dict) else None
    if isinstance(fixed_when, str) and os.path.exists(fixed_when):
        return {**payload, "fixed": True}
    logging.getLogger(__name__).warning("boom refuses %s", sorted(payload) if isinstance(payload, dict) else payload)
    raise ValueError("boom: this input cannot be handled")


def chatty(payload: dict[str, Any]) -> Iterator[Any]:
    for word in ("thinking", "about", "it"):
        yield ("FLY", {"token": word})
    yield {**payload, "said": 3}


def ticking(payload: dict[str, Any]) -> Iterator[Any]:
    """A FLY event each second (`every`) for `ticks` seconds, after `wait`: a task still working when a
    client subscribes. Each event says when it was emitted (`at`), for its follower to time it."""
    time.sleep(payload.get("wait", 0))
    for tick in range(payload["ticks"]):
        yield ("FLY", {"tick": tick, "at": time.time()})
        time.sleep(payload.get("every", 1))
    yield {**payload, "ticked": True}


def skip(payload: Any) -> None:
    return None


def flaky(payload: dict[str, Any]) -> Generator[Any, Any, None]:
    status = yield ("GET", ".status")
    if status.get("attempt", 1) < 3:
        raise ConnectionError(f"attempt {status.get('attempt', 1)} failed")
    yield {**payload, "attempts": status["attempt"]}


def crash(payload: Any) -> Any:
    os._exit(137)


def stuck(payload: Any) -> Any:
    """Stands in for C code that never returns to the interpreter: the sidecar's alarm cannot get in."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(60)
    return payload


def pick(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Fails the branches whose parts the task lists in `fail`, and gives two outputs for those it
    lists in `twice` (which a branch on its way to a join may not)."""
    if payload["part"] in payload.get("fail", []):
        raise ValueError(f"part {payload['part']} was picked to fail")
    yield {**payload, "picked": True}
    if payload["part"] in payload.get("twice", []):
        yield {**payload, "picked": True}


def gather(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A join of `fan`'s branches."""
    return {"parts": [part["part"] for part in parts], "attempts": [part["attempts"] for part in parts]}


def counter(payload: dict[str, Any]) -> dict[str, Any]:
    """Counts its calls under `payload["key"]` in its state (compare-and-set). With `die_once` naming a
    file that does not exist yet, it makes the file and kills its worker after the write, before the
    hop is acknowledged: SQS delivers the envelope again and the hop runs again."""
    from asya import state

    while True:
        count, version = state.get_versioned(payload["key"])
        try:
            state.put(payload["key"], (count or 0) + 1, if_version=version)
        except state.StateConflict:
            continue
        break
    die_once = payload.get("die_once")
    if die_once and not os.path.exists(die_once):
        open(die_once, "w").close()
        os._exit(137)
    return {**payload, "count": (count or 0) + 1}


def tally(payload: dict[str, Any]) -> dict[str, Any]:
    """Keeps `size` characters under `payload["key"]` (over what a state item takes: the state bucket's)
    and says how many it reads back."""
    from asya import state

    version = state.put(payload["key"], "x" * payload["size"])
    return {**payload, "version": version, "read": len(state.get(payload["key"]))}
