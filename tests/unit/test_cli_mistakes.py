"""Ordinary mistakes at the `asya` command line: each is one line saying what to do and a non-zero
exit, never a traceback. None of these needs a running stack: a state file stands in for one."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from asya_local import cli
from asya_local.local_state import STATE_NAME

REVIEWS = Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml"
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


def test_no_stack_running_says_how_to_start_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert "start one with `asya up`" in _refused(capsys, "status", "abc")


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
        (["check", "--config", "missing.yaml"], "missing.yaml: cannot read"),
        (["demo", "--config", str(REVIEWS), "--inputs", "missing.json"], "cannot read missing.json"),
    ],
)
def test_a_wrong_argument_is_one_line_saying_what_to_give(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert said in _refused(capsys, *argv)


def test_an_unknown_flow_names_the_flows_there_are(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _state(project)
    line = _refused(capsys, "send", "{}", "--flow", "triage")
    assert line == "asya: unknown flow 'triage' (flows: triage-reviews, summarise-reviews)"


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
    with pytest.raises(SystemExit) as shown:
        cli.main(["--version"])
    assert shown.value.code == 0
    assert capsys.readouterr().out.startswith("asya 0.")
    commands = next(action for action in cli.parser()._actions if isinstance(action, argparse._SubParsersAction))
    for name, command in commands.choices.items():
        assert command.description, name
        assert command.epilog, name
        assert command.epilog.startswith("examples:\n  asya "), name
