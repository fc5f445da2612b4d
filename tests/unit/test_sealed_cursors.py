"""The listings' cursors are sealed (`asya_gateway.cursors`): a client can neither read one nor make
one, one caller's cursor does not open for another, and what is not a cursor sealed for the caller is a
400, never a 5xx. Gateways that share the secret open each other's cursors (one per execution
environment on AWS)."""

from __future__ import annotations

import base64
from collections.abc import Callable

import orjson
import pytest

from asya.task_store import TaskStore
from asya_gateway.callers import Caller
from asya_gateway.cursors import NOT_OURS, CursorKey
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.task_error import TaskError
from tests.support.listed_tasks import twelve_tasks

ANA, BOB = Caller("ana"), Caller("bob")
LISTING = "running"


def key(secret: str = "the gateway's secret") -> CursorKey:
    return CursorKey("arn:aws:secretsmanager:us-east-1:123456789012:secret:cursor", lambda _arn: secret)


def test_a_cursor_opens_for_its_caller_and_hides_what_it_holds() -> None:
    document = {"status": LISTING, "key": {"id": {"S": "a-task-of-someone-else"}}}
    cursor = key().bound(ANA).seal(document)
    assert key().bound(ANA).open(cursor, LISTING) == document, "another environment with the same secret"
    assert b"a-task-of-someone-else" not in base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    assert key().bound(ANA).seal(document) != cursor, "a fresh nonce for every cursor"


@pytest.mark.parametrize(
    "other",
    [BOB, Caller(None), Caller("ana", admin=True)],
    ids=["another caller", "nobody", "the same name as an admin"],
)
def test_a_cursor_does_not_open_for_another_caller(other: Caller) -> None:
    cursor = key().bound(ANA).seal({"status": LISTING})
    with pytest.raises(TaskError, match=NOT_OURS) as refused:
        key().bound(other).open(cursor, LISTING)
    assert refused.value.status == 400


def test_a_cursor_does_not_open_under_another_secret() -> None:
    cursor = key().bound(ANA).seal({"status": LISTING})
    with pytest.raises(TaskError, match=NOT_OURS):
        key("another mesh's secret").bound(ANA).open(cursor, LISTING)


def _flipped(cursor: str, at: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[at] ^= 1
    return base64.urlsafe_b64encode(bytes(raw)).decode()


@pytest.mark.parametrize(
    "tampered",
    [
        lambda cursor: _flipped(cursor, 0),  # the nonce
        lambda cursor: _flipped(cursor, 20),  # the sealed text
        lambda cursor: _flipped(cursor, -1),  # the tag
        lambda cursor: cursor[:-4],
        lambda _: "",
        lambda _: "%%%not base64",
        lambda _: base64.urlsafe_b64encode(orjson.dumps({"status": LISTING})).decode(),  # unsealed
    ],
    ids=["nonce", "text", "tag", "cut short", "empty", "not base64", "unsealed JSON"],
)
def test_a_tampered_or_made_up_cursor_is_a_400(tampered: Callable[[str], str]) -> None:
    seal = key().bound(ANA)
    cursor = seal.seal({"status": LISTING, "key": {"id": {"S": "t"}}})
    with pytest.raises(TaskError, match=NOT_OURS) as refused:
        seal.open(tampered(cursor), LISTING)
    assert refused.value.status == 400


def test_the_secret_is_read_once_and_only_when_a_cursor_is_used() -> None:
    reads: list[str] = []

    def read(arn: str) -> str:
        reads.append(arn)
        return "s"

    cursor_key = CursorKey("arn:secret", read)
    assert reads == []
    seal = cursor_key.bound(ANA)
    seal.open(seal.seal({"status": None}), None)
    assert reads == ["arn:secret"]


def test_a_listing_cursor_handed_to_one_caller_is_refused_for_another(task_store: TaskStore) -> None:
    service = twelve_tasks(task_store)
    for number in range(2):
        created = f"2026-11-26T11:0{number}:00.000Z"
        task_store.create({"id": f"bob{number}", "status": "running", "created_at": created, "owner": "bob"})
    first = service.as_caller(BOB).listing.page(None, 1, None)
    cursor = first["next_cursor"]
    assert [task["id"] for task in first["tasks"]] == ["bob1"]
    assert [task["id"] for task in service.as_caller(BOB).listing.page(None, 1, cursor)["tasks"]] == ["bob0"]
    with pytest.raises(TaskError, match=NOT_OURS) as refused:
        service.as_caller(ANA).listing.page(None, 1, cursor)
    assert refused.value.status == 400


def test_the_gateway_seals_with_the_secret_its_function_names(task_store: TaskStore) -> None:
    env = {
        "ASYA_NAMESPACE": "red",
        "ASYA_TASKS_TABLE": "tasks",
        "ASYA_EVENTS_TABLE": "events",
        "ASYA_GATEWAY_CURSOR_SECRET": "arn:secret",
    }
    service = TaskService(GatewaySettings.from_env(env), task_store)
    assert service.cursor_key.secret_arn == "arn:secret"
