"""An actor's state (`asya.state`, docs/actors.md "State") against moto's DynamoDB: last writer wins,
compare-and-set, delete, missing keys, values too large, and a hop that runs again not writing twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from asya import state, state_hop
from asya.sidecar import configure
from asya.transport import SqsTransport
from asya_local.testing.tables import create_state_table
from tests.support.mesh import Mesh, envelope

TABLE = "asya-unit-actor-state"


@pytest.fixture
def dynamodb(mesh: Mesh) -> Any:
    client = boto3.client("dynamodb")
    create_state_table(client, TABLE)
    return client


@pytest.fixture
def store(dynamodb: Any) -> Iterator[state.ActorState]:
    store = state.ActorState(TABLE, "a", client=dynamodb)
    state.use(store)
    yield store
    state.use(None)
    state_hop.end()


def _item(dynamodb: Any, key: str) -> dict[str, Any]:
    item: dict[str, Any] = dynamodb.get_item(TableName=TABLE, Key={"key": {"S": key}}).get("Item", {})
    return item


def test_a_missing_key_reads_as_the_default_at_version_zero(store: state.ActorState) -> None:
    assert state.get("nothing") is None
    assert state.get("nothing", 7) == 7
    assert state.get_versioned("nothing") == (None, 0)


def test_the_last_writer_wins_and_each_write_raises_the_version(store: state.ActorState, dynamodb: Any) -> None:
    assert state.put("talk", [{"role": "user", "text": "hi"}]) == 1
    assert state.put("talk", [{"role": "user", "text": "bye"}]) == 2
    assert state.get_versioned("talk") == ([{"role": "user", "text": "bye"}], 2)
    assert _item(dynamodb, "a#talk")["value"] == {"S": '[{"role":"user","text":"bye"}]'}, "JSON under <actor>#<key>"


def test_a_compare_and_set_that_lost_raises_state_conflict(store: state.ActorState) -> None:
    _, version = state.get_versioned("calls")
    state.put("calls", 1, if_version=version)
    other = state.ActorState(TABLE, "a", client=store.client)
    other.put("calls", 5)  # another worker wrote between this one's read and write
    with pytest.raises(state.StateConflict, match="at version 2, not 1") as lost:
        state.put("calls", 2, if_version=1)
    assert (lost.value.expected, lost.value.found) == (1, 2)
    assert state.get("calls") == 5
    assert state.put("calls", 6, if_version=2) == 3


def test_a_write_races_a_writer_that_came_between_its_read_and_its_write(store: state.ActorState) -> None:
    state_hop.begin({"actor": "a", "id": "e", "position": 0, "attempt": 1})
    assert state.get("n", 0) == 0  # read and remembered in this hop
    state.ActorState(TABLE, "a", client=store.client).put("n", 10)
    assert state.put("n", 1) == 2, "last writer wins: it reads again and writes over the other"
    with pytest.raises(state.StateConflict):
        state.put("n", 2, if_version=0)


def test_a_deleted_key_reads_as_absent_and_keeps_counting_versions(store: state.ActorState, dynamodb: Any) -> None:
    state.put("k", "v")
    assert state.delete("k") == 2
    assert state.get("k", "gone") == "gone"
    assert state.get_versioned("k") == (None, 2), "a compare-and-set from before the delete still loses"
    assert "expires_at" in _item(dynamodb, "a#k"), "the tombstone expires"
    with pytest.raises(state.StateConflict):
        state.put("k", "again", if_version=1)


def test_values_null_and_falsy_are_values_not_absence(store: state.ActorState) -> None:
    state.put("none", None)
    state.put("zero", 0)
    assert state.get("none", "default") is None
    assert state.get("zero", "default") == 0


def test_a_value_over_what_an_item_takes_is_refused_without_a_state_bucket(store: state.ActorState) -> None:
    with pytest.raises(state.StateTooLarge, match="'big': the value is 400,002 bytes"):
        state.put("big", "x" * 400_000)
    assert state.get("big") is None


@pytest.fixture
def bucket(mesh: Mesh) -> str:
    boto3.client("s3").create_bucket(Bucket="asya-unit-state")
    return "asya-unit-state"


def _objects(bucket: str) -> list[str]:
    return [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=bucket).get("Contents", [])]


def test_a_large_value_goes_to_the_state_bucket_and_its_item_names_it(dynamodb: Any, bucket: str) -> None:
    store = state.ActorState(TABLE, "a", bucket=bucket, client=dynamodb)
    big = {"embedding": [0.125] * 60_000}  # 360,015 bytes of JSON
    assert store.put("cache", big) == 1
    assert store.get_versioned("cache") == (big, 1)
    [first] = _objects(bucket)
    assert first.startswith("a/"), "under the actor's own prefix"
    item = _item(dynamodb, "a#cache")
    assert (item["ref"], "value" in item) == ({"S": first}, False)

    assert store.put("cache", {**big, "v": 2}) == 2
    [second] = _objects(bucket)
    assert second != first, "a new object per write, the one it replaced deleted"
    assert store.put("cache", "small again") == 3
    assert _objects(bucket) == [], "an inline value replaced the object"
    assert store.get("cache") == "small again"
    store.put("cache", big)
    store.delete("cache")
    assert _objects(bucket) == []
    assert store.get("cache") is None


def test_a_large_write_that_lost_its_compare_and_set_leaves_no_object(dynamodb: Any, bucket: str) -> None:
    store = state.ActorState(TABLE, "a", bucket=bucket, client=dynamodb)
    store.put("cache", 1)
    with pytest.raises(state.StateConflict):
        store.put("cache", "y" * 400_000, if_version=0)
    assert _objects(bucket) == []
    assert store.get("cache") == 1


def test_an_expired_key_reads_as_absent_before_dynamodb_deletes_it(dynamodb: Any) -> None:
    store = state.ActorState(TABLE, "a", client=dynamodb)
    store.put("k", 1)
    dynamodb.update_item(
        TableName=TABLE,
        Key={"key": {"S": "a#k"}},
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues={":past": {"N": "1"}},
    )
    assert store.get_versioned("k") == (None, 1)
    assert store.put("k", 2, if_version=1) == 2


def test_keys_and_values_are_checked(store: state.ActorState) -> None:
    with pytest.raises(state.StateError, match="non-empty string"):
        state.put("", 1)
    with pytest.raises(state.StateError, match="not JSON"):
        state.put("k", object())


def test_keys_expire_after_ttl_days(dynamodb: Any) -> None:
    state.ActorState(TABLE, "a", ttl_days=3, client=dynamodb).put("k", 1)
    assert "expires_at" in _item(dynamodb, "a#k")
    state.ActorState(TABLE, "b", client=dynamodb).put("k", 1)
    assert "expires_at" not in _item(dynamodb, "b#k"), "without ttl_days a key stays"


def test_actors_keys_do_not_meet(dynamodb: Any) -> None:
    state.ActorState(TABLE, "a", client=dynamodb).put("k", "a's")
    assert state.ActorState(TABLE, "b", client=dynamodb).get("k") is None


def test_the_same_hop_run_again_does_not_write_again(store: state.ActorState) -> None:
    hop = {"actor": "a", "id": "env-1", "position": 0, "attempt": 1}
    for _ in range(2):  # the first run, then the rerun after its worker was killed
        state_hop.begin(hop)
        count = state.get("calls", 0)
        state.put("calls", count + 1)
        state.put("calls", count + 2)  # a second write of the key in the same hop is its own write
        state_hop.end()
    assert state.get_versioned("calls") == (2, 2), "the rerun read the first run's value and wrote nothing"
    state_hop.begin({**hop, "attempt": 2})  # a retry is a new attempt: it writes
    state.put("calls", 10)
    assert state.get_versioned("calls") == (10, 3)


def test_a_rerun_of_a_compare_and_set_that_lost_once_first_does_not_write_again(store: state.ActorState) -> None:
    """docs/actors.md's counter: its first run lost a compare-and-set to another worker, read again and
    won; killed before SQS heard of it, the rerun wins at once. The write that lost is no write of the
    hop's, so the rerun's first write is the first run's applied one, recognised, not a second count."""
    hop = {"actor": "a", "id": "env-1", "position": 0, "attempt": 1}

    def count(interfere: bool) -> None:
        state_hop.begin(hop, store)
        while True:
            calls, version = state.get_versioned("calls")
            if interfere:  # another worker's hop, between this read and write
                item = {"key": {"S": "a#calls"}, "version": {"N": "1"}, "value": {"S": "100"}}
                store.client.put_item(TableName=TABLE, Item=item)
                interfere = False
            try:
                state.put("calls", (calls or 0) + 1, if_version=version)
            except state.StateConflict:
                continue
            break
        state_hop.end()

    count(interfere=True)  # the first run: lost once, then counted
    assert state.get_versioned("calls") == (101, 2)
    count(interfere=False)  # the rerun after its worker was killed
    assert state.get_versioned("calls") == (101, 2), "the rerun's write was the first run's, not applied again"


def test_without_a_state_table_the_error_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASYA_STATE_TABLE", raising=False)
    state.use(None)
    with pytest.raises(state.StateError, match=r"set `state: true` on it in the mesh file"):
        state.get("k")


def test_a_hop_redelivered_after_its_send_failed_counts_once(mesh: Mesh, dynamodb: Any) -> None:
    """The sidecar marks each hop: a record redelivered after its write (its outputs were not sent)
    runs the handler again, which reads the count its first run wrote and does not write it again."""
    sidecar = mesh.actor("counts_calls", ASYA_STATE_TABLE=TABLE)
    broken = SqsTransport()
    broken.send = lambda _queue, messages: {m.entry_id for m in messages}  # type: ignore[method-assign, assignment]
    configure(sidecar.config, broken)
    assert mesh.deliver(envelope(), message_ids=["m1"]) == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    configure(sidecar.config)
    assert mesh.deliver(envelope(), message_ids=["m1"]) == {"batchItemFailures": []}
    assert len(mesh.messages("b")) == 1
    stored = state.ActorState(TABLE, "a", client=dynamodb)
    assert stored.get_versioned("calls") == (1, 1), "the rerun's write was not applied again"
    assert mesh.deliver(envelope(id="env-2")) == {"batchItemFailures": []}
    assert mesh.only("b")["payload"]["count"] == 2, "another envelope's hop is another write"
    assert _item(dynamodb, "a#calls")["value"] == {"S": "2"}


COUNTING = """\
namespace: counting
actors:
  first: {handler: counting.first, code: ., state: true}
  second: {handler: counting.second, code: ., state: true}
flows:
  both: {route: [first, second]}
"""
COUNTERS = """\
from asya import state


def first(p):
    return {**p, "first": state.put("calls", state.get("calls", 0) + 1)}


def second(p):
    return {**p, "second": state.put("calls", state.get("calls", 0) + 1)}
"""


def test_the_harness_gives_each_actor_its_own_state(tmp_path: Path) -> None:
    """Several actors' sidecars in one process: each hop's `asya.state` is its own actor's."""
    from asya_local.testing import MeshHarness

    (tmp_path / "counting.py").write_text(COUNTERS)
    (tmp_path / "mesh.yaml").write_text(COUNTING)
    with MeshHarness(tmp_path / "mesh.yaml") as mesh:
        mesh.run("both", {})
        run = mesh.run("both", {})
    assert run.succeeded, run.error
    assert (run.output["first"], run.output["second"]) == (2, 2)
