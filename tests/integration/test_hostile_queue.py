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

from asya_local.endpoint.process import LocalEndpoint
from asya_local.functions.esm import REDELIVERED
from tests.support import hostile
from tests.support.stack import RunningMesh, running

pytestmark = pytest.mark.integration

MESH = Path(__file__).resolve().parent / "hostile" / "mesh.yaml"
# A worker's lines that say it crashed, was replaced, raised or left a message for redelivery.
TROUBLE = ("execution environment", "function error", "Traceback (most recent call last)", REDELIVERED)
# The corpus's bodies SQS refuses at send, and why (`asya_local.endpoint.moto_sqs_bodies` makes moto refuse them too).
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
    case: hostile.Case
    own_id: str  # replaces the corpus's `env-h`, so each case's result can be found
    message_id: str | None = None  # None: refused
    refused: str | None = None  # what the send raised
    kept: list[dict[str, Any]] = field(default_factory=list)  # what x-sink / x-sump kept for it

    @property
    def body(self) -> str:
        return self.case.body.replace('"env-h"', f'"{self.own_id}"')

    @property
    def ids(self) -> set[str]:
        """The envelope ids its results can be kept under: its own, or the one a sidecar gives a body
        without a usable id."""
        ids = {f"sqs-{self.message_id}", self.own_id}
        try:
            document = json.loads(self.body)
        except (ValueError, RecursionError):
            return ids
        if isinstance(document, dict) and isinstance(document.get("id"), str) and document["id"]:
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
        reason = self.case.at_the_door or self.case.reason  # sent raw: from outside the mesh
        if (kept["outcome"], status.get("reason")) != (outcome, reason):
            return f"kept as {kept['outcome']} with reason {status.get('reason')!r}, not {reason!r}"
        return None


@pytest.fixture(scope="module")
def hostile_mesh(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, MESH) as mesh:
        yield mesh


def send_corpus(mesh: RunningMesh, *actors: str) -> list[Sent]:
    """Every case raw to each actor's queue, one `SendMessage` each; then wait until every queue is empty."""
    sent = [Sent(case, f"{actor}-{index:03d}") for actor in actors for index, case in enumerate(hostile.CLAIM_CHECKED)]
    for one in sent:
        url = mesh.queue_url(one.own_id.rsplit("-", 1)[0])
        try:
            one.message_id = mesh.sqs.send_message(QueueUrl=url, MessageBody=one.body)["MessageId"]
        except (ClientError, ParamValidationError, UnicodeEncodeError) as exc:
            one.refused = f"{type(exc).__name__}: {str(exc)[:120]}"
    idle = mesh.stack.wait_until_idle(timeout=180)
    assert idle, f"queues not drained: {json.dumps(mesh.stack.queue_depths())}\n{mesh.errors()}"
    return sent


def kept_results(mesh: RunningMesh) -> list[dict[str, Any]]:
    """Every result kept, in S3 or in a task record, with the id it is kept under; x-sump keeps a body
    it cannot write back as it came (not always an object, up to 1,024 levels deep, past what the
    standard library's parser reads), so bodies are read with orjson."""
    return [{key: kept[key] for key in ("id", "outcome", "envelope")} for kept in mesh.stack.kept_results().all()]


def attribute(mesh: RunningMesh, sent: list[Sent]) -> list[dict[str, Any]]:
    """Give each case what was kept under its ids; returns what was kept for no case. (Two queues sent
    the same corpus share the ids the corpus fixes, such as `env-🙂`: such a result goes to both.)"""
    by_id: dict[str, list[Sent]] = {}
    for one in sent:
        if one.message_id is not None:
            for envelope_id in one.ids:
                by_id.setdefault(envelope_id, []).append(one)
    strays = []
    for kept in kept_results(mesh):
        owners = by_id.get(kept["id"], [])
        if not owners:
            strays.append(kept)
        for owner in owners:
            owner.kept.append(kept)
    return strays


def trouble(lines: list[str]) -> list[str]:
    said = [line.split(": ", 1)[-1] for line in lines]  # x-sump's error logs quote tracebacks: not these
    return [line for line in said if line.startswith(TROUBLE) or (" in, " in line and "left for" in line)]


@pytest.mark.timeout(300)
def test_every_hostile_body_is_settled_once_at_the_first_delivery(hostile_mesh: RunningMesh) -> None:
    mesh = hostile_mesh
    sent = send_corpus(mesh, "a")
    strays = attribute(mesh, sent)
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
    assert not trouble(mesh.lines), "\n".join(trouble(mesh.lines)[:20])
    assert len(accepted) == len(sent) - len(REFUSED)


@pytest.mark.timeout(300)
def test_hostile_bodies_sent_straight_to_the_crew_are_kept_once_each(hostile_mesh: RunningMesh) -> None:
    """x-sink and x-sump must take raw bodies too (a producer's mistake, or SQS redrive into x-sump):
    each is kept, at its first delivery; x-sink passes what failed to x-sump."""
    mesh = hostile_mesh
    lines_before, taken_before = len(mesh.lines), dict(mesh.batches)
    sent = send_corpus(mesh, "x-sink", "x-sump")
    attribute(mesh, sent)
    accepted = Counter(one.own_id.rsplit("-", 1)[0] for one in sent if one.message_id is not None)
    expected = len(hostile.CLAIM_CHECKED) - len(REFUSED)
    assert accepted == {"x-sink": expected, "x-sump": expected}
    lost = [one.case.name for one in sent if one.message_id is not None and not one.kept]
    assert not lost, f"{len(lost)} bodies kept by no one: {lost}"
    taken = {source: mesh.batches[source] - taken_before.get(source, 0) for source in ("x-sink", "x-sump")}
    assert taken["x-sink"] == accepted["x-sink"], "x-sink took in each body exactly once"
    forwarded = taken["x-sump"] - accepted["x-sump"]
    assert 0 <= forwarded <= accepted["x-sink"], "x-sump took in each body once, and each x-sink failure once"
    assert not trouble(mesh.lines[lines_before:]), "\n".join(trouble(mesh.lines[lines_before:])[:20])
