"""Finding any task: every status at once, newest first across them, page after page with the cursor,
narrowed by the actor a task reached and by when it started; and a bad filter refused by a 400 that
names it, through the gateway's function as API Gateway hands requests over."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from asya.task_store import TaskStore
from asya_gateway.listing import TaskFilter
from asya_gateway.service import TaskService
from tests.support.listed_tasks import get, through_the_function, twelve_tasks


@pytest.fixture
def service(task_store: TaskStore) -> TaskService:
    return twelve_tasks(task_store)


def every_page(
    service: TaskService, status: str | None, limit: int, where: TaskFilter | None = None
) -> list[list[str]]:
    """The ids of each page, following `next_cursor` to the end."""
    pages, cursor = [], None
    while True:
        page = service.listing.page(status, limit, cursor, where)
        pages.append([task["id"] for task in page["tasks"]])
        cursor = page["next_cursor"]
        if cursor is None:
            return pages


def test_all_statuses_are_listed_newest_first_across_statuses_page_after_page(service: TaskService) -> None:
    pages = every_page(service, "all", limit=5)
    assert pages == [["t11", "t10", "t09", "t08", "t07"], ["t06", "t05", "t04", "t03", "t02"], ["t01", "t00"]]
    assert every_page(service, None, limit=5) == pages, "no status is the same as all"


def test_a_task_created_after_the_first_page_is_not_on_an_older_one(
    service: TaskService, task_store: TaskStore
) -> None:
    first = service.listing.page(None, 4, None)  # t11 to t08: no running task among them
    task_store.create({"id": "new", "status": "running", "created_at": "2026-11-26T11:00:00.000Z"})
    rest = every_page_from(service, first["next_cursor"])
    assert [task["id"] for task in first["tasks"]] + rest == [f"t{n:02d}" for n in range(11, -1, -1)]


def every_page_from(service: TaskService, cursor: str | None) -> list[str]:
    ids: list[str] = []
    while cursor is not None:
        page = service.listing.page(None, 4, cursor)
        ids += [task["id"] for task in page["tasks"]]
        cursor = page["next_cursor"]
    return ids


def test_the_actor_filter_keeps_tasks_whose_route_reached_it(service: TaskService) -> None:
    at_triage = every_page(service, None, limit=100, where=TaskFilter(actor="triage"))
    assert at_triage == [["t11", "t08", "t05", "t02"]]
    past_split = every_page(service, None, limit=3, where=TaskFilter(actor="score"))
    assert [task for page in past_split for task in page] == ["t11", "t10", "t08", "t07", "t05", "t04", "t02", "t01"]
    assert every_page(service, "failed", limit=10, where=TaskFilter(actor="triage")) == [["t08", "t02"]]


def test_the_time_range_keeps_both_ends(service: TaskService) -> None:
    where = TaskFilter(since="2026-11-26T10:03:00.000Z", until="2026-11-26T10:06:00.000Z")
    assert every_page(service, None, limit=2, where=where) == [["t06", "t05"], ["t04", "t03"]]
    until = TaskFilter(until="2026-11-26T10:01:00.000Z", flow="triage")
    assert every_page(service, None, limit=10, where=until) == [["t01"]]


def test_a_cursor_is_good_only_for_its_own_listing(service: TaskService) -> None:
    from asya_gateway.task_error import TaskError

    cursor = service.listing.page(None, 2, None)["next_cursor"]
    with pytest.raises(TaskError, match="cursor belongs to the listing of None, not 'running'"):
        service.listing.page("running", 2, cursor)
    entry = {"id": {"S": "x"}, "status": {"S": "running"}, "created_at": {"S": "y"}}
    forged = base64.urlsafe_b64encode(orjson.dumps({"status": None, "after": {"running": entry}})).decode()
    with pytest.raises(TaskError, match="not one this API returned"):  # as cursors were before they were sealed
        service.listing.page(None, 2, forged)


def test_the_api_lists_by_every_filter_and_hands_out_the_cursor(
    service: TaskService, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, first = get(
        through_the_function(service, monkeypatch), status="all", actor="score", since="2026-11-26T10:02:00Z", limit="2"
    )
    assert status == 200
    assert [task["id"] for task in first["tasks"]] == ["t11", "t10"]
    cursor = first["next_cursor"]
    params = {"status": "all", "actor": "score", "since": "2026-11-26T10:02:00Z", "limit": "2", "cursor": cursor}
    status, second = get(through_the_function(service, monkeypatch), **params)
    assert [task["id"] for task in second["tasks"]] == ["t08", "t07"]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"since": "yesterday"}, "since: 'yesterday' is not an RFC 3339 time"),
        ({"until": "2026-13-01T00:00:00Z"}, "until: '2026-13-01T00:00:00Z' is not an RFC 3339 time"),
        (
            {"since": "2026-11-26T11:00:00Z", "until": "2026-11-26T10:00:00Z"},
            "until: 2026-11-26T10:00:00.000Z is before since",
        ),
        ({"until": "9999-12-31T23:59:59-01:00"}, "until: '9999-12-31T23:59:59-01:00' is out of the calendar's range"),
        ({"status": "lost"}, "status must be all or one of pending, running"),
        ({"cursor": "bm90IGEgY3Vyc29y"}, "cursor is not one this API returned"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(
    service: TaskService, monkeypatch: pytest.MonkeyPatch, params: dict[str, str], named: str
) -> None:
    status, body = get(through_the_function(service, monkeypatch), **params)
    assert status == 400
    assert named in body["message"]


def test_a_filtered_listing_reads_at_most_its_bound_per_page_and_goes_on_from_there(
    service: TaskService, task_store: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter that keeps nothing must not read the whole table for one page: each page reads up to
    `LISTING_READS` index entries, and its cursor goes on from the last one taken."""
    from asya_gateway import listing

    monkeypatch.setattr(listing, "LISTING_READS", 8)
    reads: list[int] = []
    page_of = task_store.page

    def counted(*args: Any, **kwargs: Any) -> Any:
        answer = page_of(*args, **kwargs)
        reads[-1] += len(answer.get("Items", []))
        return answer

    monkeypatch.setattr(task_store, "page", counted)
    cursor, pages = None, 0
    while True:
        reads.append(0)
        page = service.listing.page(None, 10, cursor, TaskFilter(flow="nothing"))
        assert page["tasks"] == []
        cursor, pages = page["next_cursor"], pages + 1
        if cursor is None:
            break
    assert max(reads) <= 8
    assert sum(reads) >= 12, "every task was read once the pages went on to the end"
    assert pages >= 3
