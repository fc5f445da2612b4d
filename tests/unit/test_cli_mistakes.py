"""Ordinary mistakes at the `asya` command line: each is one line saying what to do and a non-zero
exit, never a traceback. None of these needs a running stack: a state file stands in for one."""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from asya_local import cli, results_cli, stack_option
from asya_local.gateway_client import GatewayClient
from asya_local.local_state import STATE_NAME
from asya_local.results import KeptResults

REVIEWS = Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml"
REVIEW_INPUTS = REVIEWS.parent / "inputs.json"
NOTHING_LISTENS = "http://127.0.0.1:9"  # the discard port: nothing answers on loopback


@pytest.fixture(autouse=True)
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ASYA_LOCAL_STATE", raising=False)
    return tmp_path


def _state(folder: Path, pid: int | None = None) -> Path:
    """A state file as `asya up` writes it, of a stack whose endpoint and gateway do not answer."""
    file = folder / STATE_NAME
    file.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "pid": str(os.getpid() if pid is None else pid),
        "endpoint": NOTHING_LISTENS,
        "stack": "asya-reviews",
        "namespace": "reviews",
        "bucket": "results",
        "config": str(REVIEWS),
        "gateway_url": NOTHING_LISTENS,
        "api_key": "k",
    }
    file.write_text(json.dumps(state))
    return file


def _ended_process() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What `asya argv` printed, on its one line; it must exit non-zero without a traceback."""
    try:
        code = cli.main(list(argv))
    except SystemExit as exited:  # argparse's refusals
        code = int(exited.code or 0)
    printed = capsys.readouterr()
    lines = [line for line in (printed.out + printed.err).splitlines() if line.strip()]
    assert code != 0, lines
    assert "Traceback" not in printed.out + printed.err
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


def test_no_stack_running_says_how_to_start_one(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _refused(capsys, "status", "abc") == (
        f"asya: no local stack found from this folder upward (no .asya/local.json in {project} or above): run the "
        "command in the project's folder (or set ASYA_LOCAL_STATE to its .asya/local.json), or start one with "
        "`asya up`"
    )


def test_a_stack_whose_asya_up_ended_is_called_stale(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _state(project, pid=_ended_process())
    assert "is no longer running" in _refused(capsys, "queues")


def test_an_endpoint_that_does_not_answer_is_named(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _state(project)
    assert _refused(capsys, "queues") == f"asya: nothing answers at {NOTHING_LISTENS}: is `asya up` still running?"
    assert "nothing answers" in _refused(capsys, "results", "abc")


def test_the_state_file_is_found_from_any_folder_below_or_by_its_variable(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _state(project)
    deeper = project / "src" / "actors"
    deeper.mkdir(parents=True)
    monkeypatch.chdir(deeper)
    assert "nothing answers" in _refused(capsys, "queues")
    elsewhere = project.parent / f"{project.name}-elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert "start one with `asya up`" in _refused(capsys, "queues")
    monkeypatch.setenv("ASYA_LOCAL_STATE", str(project / STATE_NAME))
    assert "nothing answers" in _refused(capsys, "queues")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["send", "@missing.json", "--flow", "triage-reviews"], "cannot read missing.json: No such file"),
        (["send", "{", "--flow", "triage-reviews"], "not JSON"),
        (["send", "{}", "--flow", "triage-reviews", "--count", "-2"], "-2 is not a count: give 1 or more"),
        (["send", "{}", "--flow", "triage-reviews", "--count", "two"], "'two' is not a whole number"),
        (["send", "{}"], "one of the arguments --flow --route is required"),
        (["resume", "abc", "[1]"], "a JSON object is wanted"),
        (["rerun", "abc", "--payload", "@missing.json"], "cannot read missing.json: No such file"),
        (["rerun", "abc", "--payload", "{"], "not JSON"),
        (["rerun", "abc", "--wait", "0"], "--wait takes a number of seconds above 0"),
        (["rerun"], "the following arguments are required: id"),
        (["sump", "redrive", "abc", "--payload", "@missing.json"], "cannot read missing.json"),
        (["tasks", "--status", "lost"], "invalid choice: 'lost'"),
        (["tasks", "--since", "yesterday"], "'yesterday' is not a time: give 30m, 2h, 1d, an RFC 3339 time"),
        (["tasks", "--until", "2026-13-01"], "argument --until: '2026-13-01' is not a time"),
        (["tasks", "--since", "0001-01-01T00:00:00+01:00"], "is out of the calendar's range"),
        (["tasks", "--limit", "500"], "500 is more than a page holds: give 1 to 100"),
        (["tasks", "--all", "--cursor", "abc"], "argument --cursor: not allowed with argument --all"),
        (["sump", "list", "--since", "soon"], "argument --since: 'soon' is not a time"),
        (["deploi"], "invalid choice: 'deploi'"),
        (["status", ""], "asya status: argument id: an empty id names nothing: give the id, or its first characters"),
        (["cancel", " "], "an empty id names nothing"),
        (["sump", "show", ""], "an empty id names nothing"),
        (["check", "--config", "missing.yaml"], "missing.yaml: cannot read"),
        (["demo", "--config", str(REVIEWS), "--inputs", "missing.json"], "cannot read missing.json"),
    ],
)
def test_a_wrong_argument_is_one_line_saying_what_to_give(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert said in _refused(capsys, *argv)


def test_a_time_range_that_ends_before_it_starts_is_refused_here_as_given_and_in_local_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No stack runs: the range is refused before any gateway is asked, by the times as typed."""
    local = r"\(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)"
    line = _refused(capsys, "tasks", "--since", "1h", "--until", "2h")
    said = rf"asya: --until 2h {local} is before --since 1h {local}: --since is the earlier end of the range"
    assert re.fullmatch(said, line)
    later = "2026-11-26T10:00:00.500Z"  # half a second after the until: as text it sorts before it
    line = _refused(capsys, "tasks", "--since", later, "--until", "2026-11-26T10:00:00Z")
    assert f"is before --since {later} (" in line


def test_the_demo_takes_a_list_of_inputs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "one.json").write_text('{"product": "kettle"}')
    line = _refused(capsys, "demo", "--config", str(REVIEWS), "--inputs", "one.json")
    assert line == "asya: one.json is not a list: give a JSON list of inputs, one task each"


def test_an_unknown_flow_names_the_flows_there_are(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _state(project)
    line = _refused(capsys, "send", "{}", "--flow", "triage")
    assert line == (
        "asya: unknown flow 'triage' (flows: triage-reviews, summarise-reviews); did you mean `triage-reviews`?"
    )


def test_flow_show_and_check_read_the_running_stacks_mesh_file_unless_told_another(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _state(project)  # a stack of the reviews mesh runs, started from another folder's mesh file
    assert cli.main(["flow", "show", "triage-reviews"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == f"reading {REVIEWS}, the running stack's mesh file (--config reads another)"
    assert shown[-1] == "flow triage-reviews: route split → score → triage → x-sink"
    checked: list[Path] = []

    def check(config: Path, _console: object) -> int:
        checked.append(config)
        return 0

    monkeypatch.setattr("asya_local.check.check", check)
    assert cli.main(["check"]) == 0
    assert checked == [REVIEWS]
    assert cli.main(["flow", "show", "triage-reviews", "--config", str(REVIEWS.parent / "nowhere.yaml")]) == 2
    assert "nowhere.yaml: cannot read" in capsys.readouterr().err


def test_flow_show_without_a_running_stack_reads_mesh_yaml_here(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "mesh.yaml: cannot read" in _refused(capsys, "flow", "show", "triage-reviews")


def test_a_second_asya_up_from_the_same_folder_is_refused_at_once(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _state(project)
    line = _refused(capsys, "up", "--config", str(REVIEWS))
    assert f"a local stack already runs from here: mesh 'reviews' at {NOTHING_LISTENS}" in line
    assert f"process {os.getpid()}" in line


def test_a_port_in_use_is_refused_before_anything_starts(listening: int, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, "up", "--config", str(REVIEWS), "--port", str(listening))
    assert line == (
        f"asya: port {listening} is taken (another asya up, or another local AWS endpoint?): "
        "--port 0 takes any free port"
    )


def test_version_and_help_for_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("asya 0.")
    with pytest.raises(SystemExit) as shown:
        cli.parser().parse_args(["--version"])
    assert shown.value.code == 0
    assert capsys.readouterr().out.startswith("asya 0.")
    commands = next(action for action in cli.parser()._actions if isinstance(action, argparse._SubParsersAction))
    for name, command in commands.choices.items():
        assert command.description, name
        assert command.epilog, name
        assert command.epilog.startswith("examples:\n  asya "), name


def test_an_unknown_flow_or_actor_to_list_by_names_those_there_are(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _state(project)
    line = _refused(capsys, "tasks", "--flow", "nope")
    assert line == "asya: unknown flow 'nope' (flows: triage-reviews, summarise-reviews)"
    line = _refused(capsys, "tasks", "--actor", "nope")
    assert line == "asya: unknown actor 'nope' (actors: split, score, triage, escalate, summarise, x-pause)"
    assert _refused(capsys, "tasks", "--actor", "scor").endswith("x-pause); did you mean `score`?")
    assert _refused(capsys, "send", "{}", "--route", "split,scor").endswith("x-pause); did you mean `score`?")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["sned", "{}"], "asya: argument COMMAND: invalid choice: 'sned'; did you mean `send`? (choose from 'up',"),
        (["tasks", "--status", "failes"], "invalid choice: 'failes'; did you mean `failed`? (choose from 'all',"),
        (["flow", "shw", "f"], "asya flow: argument ACTION: invalid choice: 'shw'; did you mean `show`?"),
        (
            ["send", "{}", "--flows", "triage-reviews"],
            "asya send: no option --flows; did you mean `--flow`? (`asya send --help` shows how)",
        ),
        (
            ["send", "--payload", "{}", "--flow", "triage-reviews"],
            "asya send: no option --payload: give the payload as is, without --payload (`asya send --help` shows how)",
        ),
        (["tasks", "--limt", "3"], "asya tasks: no option --limt; did you mean `--limit`?"),
        (["tasks", "--status"], "asya tasks: argument --status: expected one argument: give one of all, pending,"),
        (["send", "{'product': 'p1'}", "--flow", "f"], 'JSON wants double quotes ("field"), not single ones'),
    ],
)
def test_a_mistyped_command_option_or_choice_says_the_likely_one(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert said in _refused(capsys, *argv)


FAILED = "1ddf6290-5b1e-4c8e-9f7a-2b1f1c0d9e01"
PAUSED = "2c0a7d11-8e3b-4f6a-b2d4-6a1e9c3f0b72"
RUNNING = "2c0b1e42-0f9d-4a7c-8e5b-3d2f1a6c9e83"
KEPT = ("9a41c2e0-7d3b-4e18-a6f5-0b2c8d9e1f34", "9a47e5b1-2c8d-4f03-b9a6-1e7d3c5f8a20")


class Gateway:
    """Answers as the status gateway does, for three tasks and two messages x-sump kept; keeps what it
    was asked (`asked`, `created`)."""

    def __init__(self) -> None:
        self.tasks = {
            task_id: {"id": task_id, "status": status, "terminal": status == "failed", "flow": "triage-reviews"}
            for task_id, status in ((FAILED, "failed"), (PAUSED, "paused"), (RUNNING, "running"))
        }
        self.asked: list[str] = []
        self.created: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path.removeprefix("/api/v1")
        self.asked.append(f"{request.method} {path}")
        found = self.tasks.get(path.removeprefix("/mesh/"))
        if (request.method, path) == ("POST", "/mesh"):
            self.created.append(json.loads(request.content))
            return httpx2.Response(201, json={"id": str(uuid.uuid4())})
        if path == "/mesh":
            given = request.url.params.get("id_prefix", "").lower()
            listed = [task for task in self.tasks.values() if str(task["id"]).lower().startswith(given)]
            return httpx2.Response(200, json={"tasks": listed, "next_cursor": None, "more": False})
        if request.method == "GET" and found is not None:
            return httpx2.Response(200, json=found)
        if path == "/sump":
            entries = [{"id": kept, "reason": "HandlerError", "actor": "score"} for kept in KEPT]
            return httpx2.Response(200, json={"entries": entries, "next_cursor": None})
        if path.startswith("/sump/") and path.removeprefix("/sump/") in KEPT:
            return httpx2.Response(200, json={"entry": {"id": path.removeprefix("/sump/")}, "kept": {}})
        return httpx2.Response(404, json={"message": f"nothing at {path}"})


@pytest.fixture
def gateway(project: Path, monkeypatch: pytest.MonkeyPatch) -> Gateway:
    """A running stack (its state file) whose gateway is `Gateway`, and whose x-sink kept nothing."""
    _state(project)
    server = Gateway()
    client = GatewayClient("http://gateway", "k", httpx2.MockTransport(server))
    monkeypatch.setattr(results_cli, "gateway_of", lambda _state: client)  # `asya results`
    monkeypatch.setattr(stack_option, "gateway_of", lambda _state, _token: client)
    monkeypatch.setattr(KeptResults, "all", lambda _self: [])
    return server


def test_a_route_may_name_x_pause_as_the_gateway_accepts_and_no_other_of_the_crew(
    gateway: Gateway, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["send", "{}", "--route", "score,x-pause,triage"]) == 0
    assert gateway.created == [{"payload": {}, "route": ["score", "x-pause", "triage"]}]
    assert capsys.readouterr().out.strip() != ""  # the new task's id
    assert _refused(capsys, "send", "{}", "--route", "score,x-sink,nope") == (
        "asya: --route names what no route may: x-sink, nope "
        "(a route may name: split, score, triage, escalate, summarise, x-pause)"
    )


def test_a_list_of_inputs_is_sent_one_task_each_or_said_to_be_a_list(
    gateway: Gateway, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refused(capsys, "send", f"@{REVIEW_INPUTS}", "--flow", "triage-reviews") == (
        "asya: the payload is a list of 4 inputs, and flow 'triage-reviews' takes one object: "
        "send one of them, or add --each to send each as its own task"
    )
    assert cli.main(["send", f"@{REVIEW_INPUTS}", "--flow", "triage-reviews", "--each"]) == 0
    inputs = json.loads(REVIEW_INPUTS.read_text())
    assert gateway.created == [{"payload": one, "flow": "triage-reviews"} for one in inputs]
    assert len(capsys.readouterr().out.split()) >= len(inputs)  # an id printed for each
    line = _refused(capsys, "send", "{}", "--flow", "triage-reviews", "--each")
    assert line == "asya: with --each, the payload is not a list: give a JSON list of inputs, one task each"


def test_a_task_that_ended_is_not_canceled_and_only_a_paused_one_resumed(
    gateway: Gateway, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refused(capsys, "cancel", "1ddf") == "task 1ddf6290 already ended (failed); nothing to cancel"
    assert _refused(capsys, "cancel", "1DDF") == "task 1ddf6290 already ended (failed); nothing to cancel", "any case"
    assert _refused(capsys, "resume", "1ddf", "{}") == "task 1ddf6290 already ended (failed); nothing to resume"
    assert _refused(capsys, "resume", RUNNING, "{}") == "task 2c0b1e42 is running, not paused; nothing to resume"
    assert not [asked for asked in gateway.asked if asked.startswith(("DELETE", "POST"))]


def test_a_short_id_names_a_message_x_sump_kept(gateway: Gateway, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sump", "show", "9A41C2E0"]) == 0, "in any case"
    assert f"GET /sump/{KEPT[0]}" in gateway.asked
    assert KEPT[0] in capsys.readouterr().out
    assert _refused(capsys, "sump", "redrive", "9a4") == (
        f"asya: '9a4' matches {KEPT[0]}, {KEPT[1]} among what x-sump kept: give more of the id"
    )
    assert _refused(capsys, "sump", "show", "1ddf") == (
        "asya: no message starts with '1ddf' among what x-sump kept: give its whole id"
    )


def test_no_results_of_a_task_say_whether_more_may_come(gateway: Gateway, capsys: pytest.CaptureFixture[str]) -> None:
    assert _refused(capsys, "results", "zzzz") == ("asya: no task starts with 'zzzz': give its whole id")
    assert _refused(capsys, "results", "1ddf") == f"no results for task {FAILED} (it is failed)"
    assert _refused(capsys, "results", "2c0b") == f"no results yet for task {RUNNING} (it is running)"
