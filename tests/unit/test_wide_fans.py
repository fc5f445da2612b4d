"""Wide fan-outs (`asya.fans`): a root keeps few branch ids itself, the rest are counted in buckets
beside it, and the root still ends with its last branch, counting each ending once however often it is
delivered, never before a branch has ended, and with a record that does not grow with the fan.

The tasks table is the local endpoint's, over HTTP: a bucket is opened in a transaction, and moto's
own copies every table a transaction names, which makes the 100,000 branches' thousands of buckets
minutes of copying; the endpoint's transactions copy the items they write (`asya_local.endpoint.moto_transactions`)."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from asya.dynamo import Backoff, TransactionIncompleteError, transact
from asya.fans import BUCKET_BRANCHES, INLINE_BRANCHES, bucket_key, counter_key
from asya.task_record import Tally
from asya.task_store import TaskStore
from asya_gateway.stream import status_changes
from asya_gateway.views import task_view
from asya_local.roles import local_client
from asya_local.testing.metering import item_bytes
from asya_local.testing.moto_server import reset
from asya_local.testing.tables import TASKS, create_tables

NAMES = uuid.UUID("6f1c1d9e-4b0a-4f0e-9a59-0d7b1c2f3a4b")


@pytest.fixture
def task_store(patched_endpoint: str) -> TaskStore:
    """An empty tasks table (and events table) on the local endpoint, through the store every writer uses."""
    reset(patched_endpoint)
    client = local_client("dynamodb", patched_endpoint)
    create_tables(client)
    return TaskStore(TASKS, client=client)


def branch_ids(root: str, width: int) -> list[str]:
    """Branch ids as the sidecar makes them: UUIDs, one per output."""
    return [str(uuid.uuid5(NAMES, f"{root}/{index}")) for index in range(width)]


def stored(store: TaskStore, key: str) -> dict[str, Any]:
    """An item as DynamoDB holds it (typed JSON), whatever it is."""
    return store.client.get_item(TableName=store.table, Key={"id": {"S": key}}, ConsistentRead=True)["Item"]


def fanned(store: TaskStore, width: int, root: str = "root") -> dict[str, str]:
    """A root that fanned out `width` branches; each branch's bucket (none if the root keeps it)."""
    store.create({"id": root})
    branches = branch_ids(root, width)
    assigned = store.register_branches(root, branches)
    return {branch: assigned.get(branch, "") for branch in branches}


def end(store: TaskStore, branches: dict[str, str], outcome: str = "succeeded", root: str = "root") -> None:
    for branch, bucket in branches.items():
        store.finish(branch, root, outcome, {}, parent_id=root, bucket=bucket or None)


def root_view(store: TaskStore, root: str = "root") -> dict[str, Any]:
    record = store.get(root)
    assert record is not None
    return task_view(record)


def test_a_roots_record_does_not_grow_with_its_width(task_store: TaskStore) -> None:
    """A root keeps at most INLINE_BRANCHES ids; a wider fan is counted in buckets and the root holds
    only their counter's copy: the record of a root of 100,000 branches is the size of one of 20,000,
    and no larger than one of 10 (whose ids it keeps). Before, it grew by 72 bytes a branch and could
    not be written past about 5,500."""
    sizes = {}
    for index, width in enumerate((10, 20_000, 100_000)):  # roots with ids of one length
        fanned(task_store, width, root=f"root-{index}")
        sizes[width] = item_bytes(stored(task_store, f"root-{index}"))
    assert sizes[20_000] == sizes[100_000] <= sizes[10] < 1_000, sizes
    counter = task_store.fans.counts("root-2")
    assert (counter.branches, counter.open) == (100_000, 100_000 // BUCKET_BRANCHES)
    largest = item_bytes(stored(task_store, bucket_key(branch_ids("root-2", 1)[0])))
    assert largest < 4 * 1024  # a count in a bucket costs at most four write units


def test_a_fan_too_wide_for_the_root_ends_it_with_its_last_branch(task_store: TaskStore) -> None:
    branches = fanned(task_store, 120)
    ids = list(branches)
    assert set(branches.values()) == {ids[0], ids[50], ids[100]}  # in order, fifty to a bucket
    root = task_store.get("root")
    assert root is not None
    assert "branch_ids" not in root
    assert root["fans"] | {} == {"v": 1, "branches": 120, "open": 3, "succeeded": 0, "failed": 0, "canceled": 0}
    task_store.finish("root", "root", "succeeded", {"result": "s3://b/root"}, fanned_out=True)
    *first, last = ids
    end(task_store, {branch: branches[branch] for branch in first[:-1]})
    end(task_store, {first[-1]: branches[first[-1]]}, "failed")
    view = root_view(task_store)  # a bucket's branches show as ended once their bucket closes
    assert (view["status"], view["branches"]["open"], view["branches"]["total"]) == ("pending", 20, 121)
    end(task_store, {last: branches[last]})
    view = root_view(task_store)
    assert (view["status"], view["reason"]) == ("failed", "BranchFailed")
    assert "result" not in view, "the root's own envelope's result is one branch's, not the failed task's"
    record = task_store.get("root")
    assert record is not None
    assert record["result"] == "s3://b/root"  # kept in the record, where `asya results` reads it
    assert view["branches"] == {"total": 121, "open": 0, "succeeded": 120, "failed": 1, "canceled": 0}
    assert task_store.fans.counts("root").open == 0


def test_registering_the_same_fan_again_changes_nothing(task_store: TaskStore) -> None:
    """A hop run again registers the same branches: they land in the same buckets, counted once."""
    branches = fanned(task_store, 120)
    assert task_store.register_branches("root", list(branches)) == branches
    counter = task_store.fans.counts("root")
    assert (counter.version, counter.branches, counter.open) == (1, 120, 3)


def test_a_fan_goes_to_buckets_once_the_root_is_full_and_there_again_when_run_again(task_store: TaskStore) -> None:
    task_store.create({"id": "root"})
    kept, more = branch_ids("root", 40), branch_ids("more", 20)
    assert task_store.register_branches("root", kept) == {}
    assigned = task_store.register_branches("root", more)
    assert set(assigned.values()) == {more[0]}, "40 + 20 ids do not fit: the 20 go to a bucket"
    assert task_store.register_branches("root", more) == assigned
    assert task_store.register_branches("root", kept) == {}, "found in the root, where they went first"
    root = task_store.get("root")
    assert root is not None
    assert (len(root["branch_ids"]), root["fans"]["branches"]) == (40, 20)
    assert len(kept) + len(more) > INLINE_BRANCHES


def test_each_ending_counts_once_however_often_it_is_delivered(task_store: TaskStore) -> None:
    branches = fanned(task_store, 60)
    ids = list(branches)
    task_store.finish("root", "root", "succeeded", {}, fanned_out=True)
    end(task_store, {ids[0]: branches[ids[0]]})
    end(task_store, {ids[0]: branches[ids[0]]})  # redelivered
    tally = Tally()  # a crew batch: several of one bucket, one of them redelivered, counted in one write
    for branch in ids[:5]:
        tally.add("root", branch, "succeeded", branches[branch])
    for (root, bucket), members in tally.pending.items():
        task_store.count(root, members, None, bucket)
    found = task_store.fans.read(branches[ids[0]])
    assert found is not None
    assert (len(found.done_ids), found.outcomes["succeeded"]) == (5, 5)
    end(task_store, {branch: branches[branch] for branch in ids[5:]})
    view = root_view(task_store)
    assert (view["status"], view["branches"]["succeeded"], view["branches"]["total"]) == ("succeeded", 61, 61)


def test_a_delivery_that_stopped_after_closing_a_bucket_is_finished_by_its_redelivery(
    task_store: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last count closed the bucket into the counter, then the worker died before the root's copy
    was written: the redelivery of that ending counts nothing again, and copies and ends the root."""
    branches = fanned(task_store, 60)
    *first, last = branches
    task_store.finish("root", "root", "succeeded", {}, fanned_out=True)
    end(task_store, {branch: branches[branch] for branch in first})
    copy = TaskStore._copy_fans

    def died(self: TaskStore, root_id: str) -> dict[str, Any] | None:
        raise RuntimeError("worker killed")

    monkeypatch.setattr(TaskStore, "_copy_fans", died)
    with pytest.raises(RuntimeError):
        end(task_store, {last: branches[last]})
    monkeypatch.setattr(TaskStore, "_copy_fans", copy)
    assert task_store.fans.counts("root").open == 0
    assert root_view(task_store)["status"] == "pending"
    end(task_store, {last: branches[last]})
    view = root_view(task_store)
    assert (view["status"], view["branches"]["succeeded"]) == ("succeeded", 61)


def test_a_root_never_ends_while_a_bucket_is_open(task_store: TaskStore) -> None:
    """An inline branch fanned out wide: the root's own ids all end before the buckets do, and the root
    waits, by either way of ending it (a count of its own, or the one write that counts and ends)."""
    task_store.create({"id": "root"})
    task_store.register_branches("root", ["c1"])
    nested = task_store.register_branches("root", branch_ids("c1", 60))
    task_store.finish("c1", "root", "succeeded", {}, parent_id="root")
    seen = task_store.get("root")
    assert seen is not None
    task_store.count("root", {"root": "succeeded"}, seen)
    assert root_view(task_store)["status"] == "pending"
    end(task_store, dict(list(nested.items())[:-1]))
    assert root_view(task_store)["status"] == "pending"
    end(task_store, dict(list(nested.items())[-1:]))
    assert root_view(task_store)["status"] == "succeeded"


def test_a_redriven_branch_opens_its_closed_bucket_and_its_root_again(task_store: TaskStore) -> None:
    branches = fanned(task_store, 60)
    failed, *rest = branches
    task_store.finish("root", "root", "succeeded", {}, fanned_out=True)
    end(task_store, {failed: branches[failed]}, "failed")
    end(task_store, {branch: branches[branch] for branch in rest})
    assert root_view(task_store)["status"] == "failed"
    for _ in range(2):  # a redrive repeated takes the branch out once
        task_store.reopen(failed, "root", "a", 1, branches[failed])
        counter = task_store.fans.counts("root")
        assert (counter.open, counter.outcome("failed"), counter.outcome("succeeded")) == (1, 0, 10)
    view = root_view(task_store)
    assert (view["status"], view["branches"]["open"]) == ("running", BUCKET_BRANCHES)  # its bucket is open
    end(task_store, {failed: branches[failed]})
    assert root_view(task_store)["status"] == "succeeded"


def test_buckets_and_counters_are_not_tasks(task_store: TaskStore) -> None:
    branches = fanned(task_store, 60)
    keys = [bucket_key(next(iter(branches))), counter_key("root")]
    assert [task_store.get(key) for key in keys] == [None, None]
    images = [
        {"eventName": "INSERT", "dynamodb": {"NewImage": stored(task_store, key), "SequenceNumber": "1"}}
        for key in keys
    ]
    assert status_changes(images) == []


def cancelling(*answers: list[str] | None) -> tuple[Any, Stubber]:
    """A DynamoDB client whose transactions are cancelled for the given reasons, one answer per call."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    stubber = Stubber(client)
    for codes in answers:
        if codes is None:
            stubber.add_response("transact_write_items", {})
        else:
            reasons = [{"Code": code} for code in codes]
            stubber.add_client_error(
                "transact_write_items",
                service_error_code="TransactionCanceledException",
                modeled_fields={"CancellationReasons": reasons},
            )
    stubber.activate()
    return client, stubber


QUICK = Backoff(attempts=3, base=0.0, cap=0.0, budget=1.0, sleep=lambda _: None)
CHECK = {"TableName": "t", "Key": {"id": {"S": "a"}}, "ConditionExpression": "attribute_exists(id)"}
ACTION = [{"ConditionCheck": CHECK}]


def test_a_transaction_cancelled_for_a_conflict_is_sent_again_and_a_failed_condition_is_answered() -> None:
    conflicted, stubber = cancelling(["None", "TransactionConflict"], None)
    assert transact(conflicted, ACTION, backoff=QUICK) is None
    stubber.assert_no_pending_responses()
    refused, _ = cancelling(["ConditionalCheckFailed", "None"])
    assert transact(refused, ACTION, backoff=QUICK) == ["ConditionalCheckFailed", "None"]
    busy, stubber = cancelling(*[["TransactionConflict"]] * 3)
    with pytest.raises(TransactionIncompleteError):
        transact(busy, ACTION, backoff=QUICK)
    stubber.assert_no_pending_responses()
