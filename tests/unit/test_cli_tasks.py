"""`asya tasks` finds any task: every status by default, newest first, narrowed by flow, actor and
time, one page at a time with the command for the next printed, or every page with `--all`; through
the real client and the gateway's function."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from asya.task_store import TaskStore
from asya_local import cli, listing_cli, running_mesh, stack_option
from asya_local.gateway_client import GatewayClient
from tests.support.listed_tasks import through_the_function, twelve_tasks

REVIEWS = Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml"  # its actors: ROUTE's and more


@pytest.fixture
def listed(task_store: TaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
    transport = through_the_function(twelve_tasks(task_store), monkeypatch)
    for module in (running_mesh, stack_option):
        monkeypatch.setattr(module, "running_state", lambda: {"config": str(REVIEWS)})
    monkeypatch.setattr(
        stack_option, "gateway_of", lambda _state, _token: GatewayClient("http://gateway", "k", transport)
    )
    monkeypatch.setenv("COLUMNS", "200")


def shown(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[str], str | None]:
    """The task ids `asya tasks argv` printed, in order, and the command it gave for the next page."""
    assert cli.main(["tasks", *argv]) == 0
    printed = capsys.readouterr().out
    ids = [
        word for line in printed.splitlines() for word in line.split() if word.startswith("t") and word[1:].isdigit()
    ]
    more = [line.removeprefix("more tasks: ") for line in printed.splitlines() if line.startswith("more tasks: ")]
    return ids, more[0] if more else None


def test_every_status_newest_first_and_the_next_page_by_the_command_it_prints(
    listed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    first, more = shown(capsys, "--limit", "5", "--actor", "score")
    assert first == ["t11", "t10", "t08", "t07", "t05"]
    assert more is not None
    assert more.startswith("asya tasks --status all --actor score --limit 5 --cursor=")
    second, last = shown(capsys, *shlex.split(more)[2:])
    assert (second, last) == (["t04", "t02", "t01"], None)


def test_all_pages_at_once_within_a_time_range(listed: None, capsys: pytest.CaptureFixture[str]) -> None:
    ids, more = shown(
        capsys, "--limit", "2", "--all", "--since", "2026-11-26T10:03:00Z", "--until", "2026-11-26T11:06:00+01:00"
    )
    assert (ids, more) == (["t06", "t05", "t04", "t03"], None)
    failed, _ = shown(capsys, "--status", "failed")
    assert failed == ["t08", "t02"]


def test_a_cursor_beginning_with_a_dash_reads_back_as_the_cursor() -> None:
    command = listing_cli.next_page({"status": "all"}, 5, "-AbC_d")
    assert cli.parser().parse_args(command[1:]).cursor == "-AbC_d"
