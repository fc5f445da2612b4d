"""Ctrl-C of `asya demo`, as of `asya up`: one line saying what stopped, the stack stopped, exit 130,
no KeyboardInterrupt traceback (before, the demo ended with one). The stack is a stand-in: what is
checked is what the command does with the interrupt."""

from __future__ import annotations

import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from asya_cdk.loading import load_mesh
from asya_local import cli, local_cli

REVIEWS = Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml"


@pytest.fixture(autouse=True)
def own_ctrl_c(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stop ignores a second Ctrl-C; the test process keeps its own."""
    monkeypatch.setattr(signal, "signal", lambda *_args: None)


def _demo(capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """`asya demo` of the reviews mesh: its exit status and every line it printed."""
    code = cli.main(["demo", "--config", str(REVIEWS)])
    printed = capsys.readouterr()
    assert "Traceback" not in printed.out + printed.err
    return code, [line for line in (printed.out + printed.err).splitlines() if line.strip()]


def test_ctrl_c_while_the_demo_sends_stops_the_stack_on_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    done: list[str] = []

    class Gateway:
        def create_task(self, _body: dict[str, Any]) -> dict[str, Any]:
            raise KeyboardInterrupt

    stack = SimpleNamespace(mesh=load_mesh(REVIEWS), gateway_url="http://gateway", gateway_client=Gateway)
    log = SimpleNamespace(hush=lambda: done.append("workers hushed"))
    started = SimpleNamespace(stack=stack, log=log, stop=lambda: done.append("stack stopped"))
    monkeypatch.setattr(local_cli, "_start", lambda _args: started)
    assert _demo(capsys) == (local_cli.INTERRUPTED, ["stopped before the demo ended"])
    assert done == ["workers hushed", "stack stopped"]


def test_ctrl_c_while_the_demos_stack_starts_says_so_as_asya_up_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(local_cli, "_start", interrupted)
    assert _demo(capsys) == (130, ["stopped before the stack was up"])
