"""Every request a hop makes of the tasks table stays within what an actor's role is granted
(`asya.task_attributes`, granted by `asya_cdk.tasks.TaskTables.hop_reporting`): a new attribute
written by the sidecar without a grant fails here, before it fails on AWS."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from asya.dedup import Claim
from asya.task_attributes import HOP_READS, HOP_RETURN_VALUES, HOP_WRITES
from asya.task_record import Report
from asya.task_store import TaskStore
from asya_local.endpoint.dynamodb_conditions import READS, condition_keys
from asya_local.endpoint.moto_iam import TRANSACTION_ACTIONS

Sent = list[tuple[str, dict[str, Any]]]


@pytest.fixture
def sent(task_store: TaskStore) -> Sent:
    """The requests the store sends from now on, by operation, as the caller gave them."""
    found: Sent = []

    def keep(params: dict[str, Any], model: Any, **_: Any) -> None:
        found.append((model.name, copy.deepcopy(params)))

    task_store.client.meta.events.register("provide-client-params.dynamodb", keep)
    return found


def _item_requests(sent: Sent) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each request as IAM authorizes it: a transaction action by action."""
    for operation, params in sent:
        if operation == "TransactWriteItems":
            for item in params["TransactItems"]:
                ((kind, action),) = item.items()
                yield TRANSACTION_ACTIONS[kind], action
        else:
            yield operation, params


def assert_within_the_hops_grant(sent: Sent) -> None:
    assert sent, "the hop sent nothing: nothing was checked"
    for operation, params in _item_requests(sent):
        assert operation in {"UpdateItem", "GetItem", "BatchGetItem"}, f"{operation} is not granted to actors"
        assert "ReturnValuesOnConditionCheckFailure" not in params, "it returns the whole record"
        keys = condition_keys(operation, params)
        attributes = set(keys["dynamodb:attributes"])
        if operation in READS:
            assert attributes <= HOP_READS, f"{operation} reads {sorted(attributes - HOP_READS)}"
            assert keys["dynamodb:select"] == ("SPECIFIC_ATTRIBUTES",), f"{operation} reads the whole record"
        else:
            assert attributes <= HOP_WRITES, f"{operation} names {sorted(attributes - HOP_WRITES)}"
            assert keys["dynamodb:returnvalues"][0] in HOP_RETURN_VALUES


def _report(task_id: str, actor: str = "a", **fields: Any) -> Report:
    route = {"prev": ["start"], "curr": actor, "next": ["b"]}
    return Report(task_id=task_id, actor=actor, route=route, phase="processing", progress=33.3, **fields)


def test_a_hops_claim_refusal_and_reports(task_store: TaskStore, sent: Sent) -> None:
    report = _report("t1", parent_id="p1", root_id="r1", bucket="b1")
    assert task_store.claim_hop(report, 1, held_until_ms=2**62).claim is Claim.NEW
    assert task_store.claim_hop(report, 1, held_until_ms=2**62).claim is Claim.IN_PROGRESS, "read back"
    assert task_store.report(_report("t1", attempt=2), deadline_at="2099-01-01T00:00:00Z", hop=1) is not None
    assert task_store.statuses(["t1", "t2"]) == {"t1": "running"}
    assert_within_the_hops_grant(sent)


@pytest.mark.parametrize("width", [3, 120])
def test_registering_a_fan_outs_branches(task_store: TaskStore, sent: Sent, width: int) -> None:
    """Inline on the root, and, for a wide fan-out, in buckets and their counter."""
    task_store.claim_hop(_report("root"), 1, held_until_ms=2**62)
    task_store.register_branches("root", [str(uuid.uuid4()) for _ in range(width)])
    assert_within_the_hops_grant(sent)


def test_a_branch_ending_at_its_join(task_store: TaskStore, sent: Sent) -> None:
    task_store.claim_hop(_report("branch", root_id="root"), 1, held_until_ms=2**62)
    details = {"reason": "Joined", "actor": "join", "route": {"prev": [], "curr": "join", "next": []}}
    assert task_store.finish_gathered("branch", "succeeded", {**details, "joined_into": "j1", "root_id": "root"})
    assert_within_the_hops_grant(sent)


def test_a_branch_failing_after_its_join_gave_up(task_store: TaskStore, sent: Sent) -> None:
    """Counted on the joined envelope's record (`asya.join_failure`): a larger count first, so that the
    second write, naming the branch alone, is made too."""
    task_store.claim_hop(_report("root"), 1, held_until_ms=2**62)
    task_store.count_join_failure("root", 3, None)
    task_store.count_join_failure("root", 2, '{"branch": 2}')
    assert_within_the_hops_grant(sent)


def test_a_producers_task_admitted(task_store: TaskStore, sent: Sent) -> None:
    """An envelope from outside the mesh makes its record (`asya.admission`), again on a redelivery of
    the same message, never over another task's."""
    assert task_store.admit("p1", "m1")
    assert task_store.admit("p1", "m1")
    assert not task_store.admit("p1", "m2")
    report = _report("p2")
    assert task_store.claim_hop(report, 0, held_until_ms=2**62, admitted_by="m1").claim is Claim.NEW
    assert task_store.claim_hop(report, 0, held_until_ms=0, admitted_by="m1").claim is Claim.IN_PROGRESS
    assert task_store.claim_hop(report, 0, held_until_ms=2**62, admitted_by="m2").claim is Claim.TAKEN
    assert_within_the_hops_grant(sent)
