"""Hostile input through real queues: every body of the corpus in `tests/unit/hostile.py` is sent raw to
actor `a`'s queue of a running local stack. SQS refuses what it cannot carry (at send, whole); each body it
takes is processed or lands in x-sump with its precise reason at the first delivery: none lost, none kept
twice, none received twice, no worker crashed, every queue drained (so nothing in a dead-letter queue)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError

from asya_local.esm import REDELIVERED
from asya_local.stack import LocalEndpoint
from tests.integration.conftest import RunningMesh, deployed
from tests.unit import hostile

pytestmark = pytest.mark.integration

MESH = Path(__file__).resolve().parent / "hostile" / "mesh.yaml"
# A worker's lines that say it crashed, was replaced, raised or left a message for redelivery.
TROUBLE = ("execution environment", "function error", "Traceback (most recent call last)", REDELIVERED)
# The corpus's bodies SQS refuses at send, and why (`asya_local.moto_sqs_bodies` makes moto refuse them too).
REFUSED = {
    "payload over the SQS limit": "over 1 MiB",
    "invalid envelope over the SQS limit": "over 1 MiB",
    "not JSON, over the SQS limit": "over 1 MiB",
    "lone surrogate in the body itself": "a character outside SQS's set",
    "invalid UTF-8 bytes (surrogate-escaped)": "a character outside SQS's set",
    "empty body": "empty",
}


@dataclass
class Sent:
    index: int
    case: hostile.Case
    body: str
    message_id: str | None = None  # None: refused
    refused: str | None = None  # what the send raised
    kept: list[dict[str, Any]] = field(default_factory=list)  # what x-sink / x-sump kept for it

    @property
    def ids(self) -> set[str]:
        """The envelope ids its results can be kept under: its own, or the one a sidecar gives a body
        without a usable id."""
        ids = {f"sqs-{self.message_id}", unique_id(self.index)}
        try:
            document = json.loads(self.body)
        except (ValueError, RecursionError):
            return ids
        if isinstance(document, dict) and isinstance(document.get("id"), str):
            ids.add(document["id"])
        return ids

    def verdict(self, redelivered: set[str]) -> str | None:
        """None if this case went as it must, else what went wrong."""
        expected = REFUSED.get(self.case.name)
        if self.message_id is None:
            return None if expected else f"refused at send: {self.refused}"
        if expected:
            return f"SQS took a body AWS refuses ({expected})"
        if self.message_id in redelivered:
            return "received more than once (looping)"
        if not self.kept:
            return "lost: nothing kept"
        if len(self.kept) > 1:
            return f"duplicated: kept as {[k['outcome'] for k in self.kept]}"
        (kept,) = self.kept
        status = kept["envelope"].get("status", {})
        if self.case.reason is None:
            route = kept["envelope"].get("route", {})
            if kept["outcome"] != "succeeded" or route.get("prev") != ["a", "b"]:
                return f"not forwarded: {kept['outcome']}, {status.get('reason')}, route {route}"
            return None
        outcome = "sump" if self.case.lands == "x-sump" else "succeeded"
        if (kept["outcome"], status.get("reason")) != (outcome, self.case.reason):
            return f"kept as {kept['outcome']} with reason {status.get('reason')!r}, not {self.case.reason!r}"
        return None


def unique_id(index: int) -> str:
    return f"env-h{index:03d}"


def with_unique_id(index: int, body: str) -> str:
    """The corpus gives most bodies the id `env-h`; each case gets its own, to find its result."""
    return body.replace('"env-h"', f'"{unique_id(index)}"')


@pytest.fixture(scope="module")
def hostile_mesh(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    holder: list[RunningMesh] = []
    with deployed(endpoint, MESH, lambda s, line: holder[0].on_line(s, line) if holder else None) as stack:
        holder.append(RunningMesh(stack))
        yield holder[0]


def send(mesh: RunningMesh, sent: Sent) -> None:
    try:
        response = mesh.sqs.send_message(QueueUrl=mesh.queue_url("a"), MessageBody=sent.body)
    except (ClientError, ParamValidationError, UnicodeEncodeError) as exc:
        sent.refused = f"{type(exc).__name__}: {str(exc)[:120]}"
        return
    sent.message_id = response["MessageId"]


@pytest.mark.timeout(300)
def test_every_hostile_body_is_settled_once_at_the_first_delivery(hostile_mesh: RunningMesh) -> None:
    mesh = hostile_mesh
    sent = [Sent(index, case, with_unique_id(index, case.body)) for index, case in enumerate(hostile.CASES)]
    for one in sent:
        send(mesh, one)
    idle = mesh.stack.wait_until_idle(timeout=180)
    assert idle, f"queues not drained: {json.dumps(mesh.stack.queue_depths())}\n{mesh.errors()}"

    by_id: dict[str, Sent] = {}
    for one in sent:
        if one.message_id is not None:
            for envelope_id in one.ids:
                assert envelope_id not in by_id, f"two cases share the id {envelope_id!r}"
                by_id[envelope_id] = one
    strays = []
    for kept in mesh.all_results():
        owner = by_id.get(kept["envelope"].get("id"))
        if owner is None:
            strays.append(kept)
        else:
            owner.kept.append(kept)
    redelivered = {line.split()[-3] for line in mesh.lines if REDELIVERED in line}

    verdicts = {one.case.name: one.verdict(redelivered) for one in sent}
    failed = {name: why for name, why in verdicts.items() if why}
    accepted = [one for one in sent if one.message_id is not None]
    counts = Counter(
        lost=sum(1 for one in accepted if not one.kept),
        duplicated=sum(1 for one in accepted if len(one.kept) > 1) + len(strays),
        looping=sum(1 for one in accepted if one.message_id in redelivered),
    )
    report = "\n".join(f"  {name}: {why}" for name, why in failed.items())
    assert not failed, f"{len(failed)} of {len(sent)} cases went wrong ({dict(counts)}):\n{report}"
    assert dict(counts) == {"lost": 0, "duplicated": 0, "looping": 0}, f"kept for no case: {strays[:3]}"

    lands = Counter(one.case.lands for one in accepted)
    forwarded = lands["b"]
    assert {source: mesh.batches[source] for source in ("a", "b", "x-sink", "x-sump")} == {
        "a": len(accepted),
        "b": forwarded,
        "x-sink": forwarded + lands["x-sink"],
        "x-sump": lands["x-sump"],
    }, "every actor took in each envelope exactly once"
    said = [line.split(": ", 1)[-1] for line in mesh.lines]  # x-sump's error logs quote tracebacks: not these
    trouble = [line for line in said if line.startswith(TROUBLE) or (" in, " in line and "left for" in line)]
    assert not trouble, "\n".join(trouble[:20])
    assert len(accepted) == len(sent) - len(REFUSED)
