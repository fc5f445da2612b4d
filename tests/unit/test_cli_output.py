"""What the `asya` commands print where no terminal reads it (a pipe, a CI log): a refusal is one line
on stderr however narrow the terminal the variables describe, and stdout holds only the answer."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from asya.task_store import TaskStore
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_local import cli, results_cli, running_mesh, stack_option
from asya_local.gateway_client import GatewayClient, GatewayError
from asya_local.results import KeptResults, record_result
from asya_local.screen import screen
from asya_local.testing.tables import EVENTS, TASKS
from tests.support.listed_tasks import through_the_function

REVIEWS = Path(__file__).resolve().parents[2] / "examples" / "reviews" / "mesh.yaml"

LONG = "a message much longer than forty columns, which a log must keep on one line to be found whole"


def test_a_refusal_in_a_pipe_is_one_line_on_stderr_even_with_forty_columns(tmp_path: Path) -> None:
    """No stack runs from an empty folder: the refusal says so on one line, the 40 columns of `COLUMNS`
    notwithstanding, and stdout stays empty."""
    environment = {**os.environ, "COLUMNS": "40", "ASYA_LOCAL_STATE": str(tmp_path / "local.json")}
    environment.pop("TERM", None)
    done = subprocess.run(
        [sys.executable, "-m", "asya_local.cli", "status", "5f0c9a2e"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=environment,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("asya: ")
    assert len(line) > 40


def test_text_printed_to_a_file_is_never_broken() -> None:
    out = io.StringIO()
    screen(file=out).print(LONG + " " + LONG)
    assert out.getvalue() == f"{LONG} {LONG}\n"


UUIDS = {name: str(uuid.uuid5(uuid.NAMESPACE_URL, name)) for name in ("ok", "bad", "stopped", "busy")}
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/home/someone/project/actors/score.py", line 12, in score\n'
    "    raise ValueError(f'review {n} has no text')\n"
    "ValueError: review 2 of lamp-2 has no text to score"
)


@pytest.fixture
def gateway(task_store: TaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four tasks of the reviews mesh through the gateway's function: one succeeded, one failed at
    score (a ValueError), one canceled at split, one running; `asya` finds the gateway as a stack's."""
    route = {"prev": ["split"], "curr": "score", "next": ["triage"]}
    records = {
        "ok": {"status": "succeeded", "progress": 100, "output": '{"label": "even"}'},
        "bad": {
            "status": "failed",
            "progress": 100,
            "reason": "ValueError",
            "actor": "score",
            "error": {"type": "ValueError", "message": "review 2 of lamp-2 has no text to score", "traceback": TRACE},
        },
        "stopped": {"status": "canceled", "progress": 100, "reason": "Canceled", "actor": "split"},
        "busy": {"status": "running", "progress": 40, "actor": "score"},
    }
    for minute, (name, record) in enumerate(records.items()):
        task_store.create(
            {
                "id": UUIDS[name],
                "flow": "triage-reviews",
                "route": route,
                "created_at": f"2026-11-26T10:0{minute}:00.123Z",
                "updated_at": f"2026-11-26T10:0{minute}:30.456Z",
                **record,
            }
        )
    transport = through_the_function(TaskService(GatewaySettings("n", TASKS, EVENTS), tasks=task_store), monkeypatch)
    monkeypatch.setattr(running_mesh, "running_state", lambda: {"config": str(REVIEWS)})
    monkeypatch.setattr(stack_option, "running_state", lambda: {"config": str(REVIEWS)})
    monkeypatch.setattr(stack_option, "gateway_of", lambda _s, _t: GatewayClient("http://gateway", "k", transport))
    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`asya argv`: its exit status, stdout and stderr."""
    code = cli.main(list(argv))
    printed = capsys.readouterr()
    return code, printed.out, printed.err


def test_the_task_list_shows_short_ids_why_and_how_far_in_local_time(
    gateway: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "tasks")
    assert code == 0
    rows = {cells[1].strip(): line for line in out.splitlines() if len(cells := line.split("│")) > 5}
    assert set(rows) - {"id", ""} == {UUIDS[name][:8] for name in UUIDS}, "8 characters, each on one line"
    assert not any(whole in out for whole in UUIDS.values())
    bad = rows[UUIDS["bad"][:8]]
    assert "ValueError: review 2 of lamp-2" in bad, "why, in the reason column"
    assert "stopped at score" in bad, "how far, as the console says it, not 100 %"
    assert "100 %" not in rows[UUIDS["stopped"][:8]]
    assert "40 %" in rows[UUIDS["busy"][:8]]
    assert "2026-11-26 11:01:00" in bad, "started, in the machine's zone, to the second"
    assert ".123" not in out
    assert "Z " not in out


def test_tasks_as_json_is_the_whole_answer_on_stdout(gateway: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "tasks", "--status", "failed", "--output", "json")
    assert (code, err) == (0, "")
    answer = json.loads(out)
    assert [task["id"] for task in answer["tasks"]] == [UUIDS["bad"]]
    assert answer["next_cursor"] is None


def test_status_shows_the_whole_id_asked_about_and_as_json_the_task(
    gateway: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = _run(capsys, "status", UUIDS["bad"][:8])
    assert f"task {UUIDS['bad']}" in out
    code, out, err = _run(capsys, "status", UUIDS["bad"][:8], "--output", "json")
    assert (code, err) == (1, "")
    assert json.loads(out)["error"]["type"] == "ValueError"


@pytest.mark.parametrize(
    ("name", "code"),
    [("ok", 0), ("bad", 1), ("stopped", 1), ("busy", 3)],
    ids=["succeeded", "failed", "canceled", "running"],
)
def test_status_and_watch_exit_alike_by_how_the_task_stands(
    name: str, code: int, gateway: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """0 succeeded, 1 failed or canceled, 3 not ended (docs/local-stack.md, "Exit status"); `watch` of a
    task that has not ended follows it, here until a stand-in stream's last event."""
    monkeypatch.setattr(GatewayClient, "follow", lambda self, task_id: iter([("status", self.task(task_id))]))
    assert _run(capsys, "status", UUIDS[name])[0] == code
    assert _run(capsys, "watch", UUIDS[name])[0] == code
    assert _run(capsys, "watch", UUIDS[name], "--output", "json")[0] == code


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["watch"],
        ["cancel"],
        ["resume", "{}"],
        ["rerun"],
    ],
    ids=lambda argv: argv[0],
)
@pytest.mark.parametrize("given", ["00000000-0000-4000-8000-000000000000", "ffff"], ids=["whole", "short"])
def test_an_unknown_id_is_a_mistake_for_every_command(
    argv: list[str], given: str, gateway: None, capsys: pytest.CaptureFixture[str]
) -> None:
    command, *rest = argv
    code, out, err = _run(capsys, command, given, *rest)
    assert code == 2, err
    assert out == ""
    assert err.startswith("asya: ")


def test_watch_ends_with_the_table_status_prints(
    gateway: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream's last status may be a lighter view than `GET` gives (no failed branches): `watch`
    prints the task as `status` does."""
    light = {"id": UUIDS["bad"], "status": "failed", "terminal": True, "progress": 100}
    monkeypatch.setattr(GatewayClient, "follow", lambda _self, _id: iter([("status", light)]))
    _, watched, _ = _run(capsys, "watch", UUIDS["bad"])
    _, status, _ = _run(capsys, "status", UUIDS["bad"])
    assert status in watched
    assert "ValueError: review 2 of lamp-2 has no text to score" in status


SUMP_ENTRY = {
    "id": UUIDS["bad"],
    "reason": "ValueError",
    "actor": "score",
    "arrived_at": "2026-11-26T10:01:30.456Z",
    "error_type": "ValueError",
    "message": "review 2 of lamp-2 has no text to score, " * 4,
}


def test_sump_list_shows_short_ids_and_cuts_errors_between_words_and_json_has_them_whole(
    gateway: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(GatewayClient, "sump", lambda _self, **_filters: iter([SUMP_ENTRY]))
    code, out, _ = _run(capsys, "sump", "list")
    assert code == 0
    assert UUIDS["bad"][:8] in out
    assert UUIDS["bad"] not in out
    assert "2026-11-26 11:01:30" in out
    shown = " ".join(cell.strip() for line in out.splitlines() for cell in line.split("│")[5:6] if cell.strip())
    assert shown.startswith("ValueError: review 2 of lamp-2 has no text to score,")
    assert shown.endswith(" …"), "cut between words"
    code, out, err = _run(capsys, "sump", "list", "--output", "json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {"entries": [SUMP_ENTRY]}


def _kept(project: Path) -> list[dict[str, Any]]:
    """What x-sink kept of task `bad`: its error payload, raised in the project's actor under a library."""
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/opt/runtime/asya/hop.py", line 80, in run\n'
        "    out = handler(payload)\n"
        '  File "/srv/venv/lib/python3.11/site-packages/wrapt/wrappers.py", line 9, in __call__\n'
        "    return self.f(*a)\n"
        f'  File "{project}/actors/helpers.py", line 3, in text_of\n'
        "    return check(review)\n"
        f'  File "{project}/actors/score.py", line 12, in check\n'
        "    raise ValueError('review 2 of lamp-2 has no text to score')\n"
        "ValueError: review 2 of lamp-2 has no text to score"
    )
    error = {"type": "ValueError", "message": "review 2 of lamp-2 has no text to score", "traceback": trace}
    envelope = {
        "id": UUIDS["bad"],
        "route": {"prev": ["split"], "curr": "score", "next": ["triage"]},
        "status": {"phase": "failed", "actor": "score", "reason": "ValueError", "error": error},
        "payload": {"error": "processing_error", "details": error, "original_payload": {"review": ""}},
    }
    key = f"results/reviews/{UUIDS['bad']}/failed.json"
    return [{"id": UUIDS["bad"], "key": key, "outcome": "failed", "envelope": envelope, "text": json.dumps(envelope)}]


def test_results_sums_up_a_failure_without_the_machines_folders_and_json_keeps_it_whole(
    gateway: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    state = {"endpoint": "http://endpoint", "bucket": "results", "namespace": "reviews", "config": str(REVIEWS)}
    monkeypatch.setattr(results_cli, "running_state", lambda: state)
    monkeypatch.setattr(results_cli, "local_client", lambda *_args: None)
    monkeypatch.setattr(KeptResults, "all", lambda _self: _kept(tmp_path))
    code, out, _ = _run(capsys, "results", UUIDS["bad"][:8])
    assert code == 0
    rows = {cells[1].strip(): cells[2].strip() for line in out.splitlines() if len(cells := line.split("│")) == 4}
    assert rows["status"] == "failed at score"
    assert rows["error"] == "ValueError: review 2 of lamp-2 has no text to score"
    assert rows["where"] == "actors/score.py, line 12, in check", "from the project's folder"
    assert rows["input"] == '{"review": ""}'
    assert "… 1 earlier frame" in out
    assert 'File "wrapt/wrappers.py"' in out, "a library's file from its package"
    assert str(tmp_path) not in out
    assert "/srv/" not in out
    assert len(out.splitlines()) < 30, "a summary, not the 130 lines of the raw documents"
    code, out, _ = _run(capsys, "results", UUIDS["bad"][:8], "--output", "json")
    assert code == 0
    [raw] = json.loads(out)
    assert raw["status"]["error"]["traceback"].startswith("Traceback")
    assert raw["key"].endswith("/failed.json")
    code, out, err = _run(capsys, "results", "00000000-0000-4000-8000-000000000000")
    assert (code, out) == (2, ""), "an id nothing was kept for and no task has: a mistake, as for `status`"
    assert err.startswith("asya: no results for 00000000-0000-4000-8000-000000000000")


def test_results_of_a_failed_fan_out_says_its_envelope_ended_well_and_its_task_failed_by_a_branch_once(
    gateway: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A root whose own envelope ended well after triage and whose branch `bad` failed at score: its
    block says how its envelope ended and, on a row of its own, how the task did and through which
    branch; the branch's failure, kept by x-sump and in its task record, is one block."""
    monkeypatch.chdir(tmp_path)
    root = str(uuid.uuid5(uuid.NAMESPACE_URL, "root"))
    [failure] = _kept(tmp_path)
    failure["envelope"]["parent_id"] = root
    sump_copy = {**failure, "key": f"results/reviews/{UUIDS['bad']}/sump.json", "outcome": "sump"}
    status = failure["envelope"]["status"]
    branch_record = {"id": UUIDS["bad"], "parent_id": root, "status": "failed", **status}
    root_record = {
        "id": root,
        "status": "failed",
        "phase": "failed",
        "own_outcome": "succeeded",
        "actor": "triage",
        "route": {"prev": ["split", "triage"], "curr": "", "next": []},
    }
    kept = [
        sump_copy,
        record_result({**root_record, "output": json.dumps({"label": "mixed"})}),
        record_result({**branch_record, "output": json.dumps(failure["envelope"]["payload"])}),
    ]
    state = {"endpoint": "http://endpoint", "bucket": "results", "namespace": "reviews", "config": str(REVIEWS)}
    monkeypatch.setattr(results_cli, "running_state", lambda: state)
    monkeypatch.setattr(results_cli, "local_client", lambda *_args: None)
    monkeypatch.setattr(KeptResults, "all", lambda _self: kept)
    code, out, _ = _run(capsys, "results", root[:8])
    assert code == 0
    assert out.startswith(f"succeeded: envelope {root}")
    first = out.split(f"envelope {UUIDS['bad']}")[0]
    rows = {cells[1].strip(): cells[2].strip() for line in first.splitlines() if len(cells := line.split("│")) == 4}
    assert rows["status"] == "succeeded after triage", "the envelope's own ending, not the task's"
    assert rows["task"] == (
        f"failed: branch {UUIDS['bad'][:8]} failed at score: ValueError: review 2 of lamp-2 has no text to score"
    )
    assert out.count(f"envelope {UUIDS['bad']}") == 1, "the branch's failure once, not as x-sump's and the record's"
    assert f"x-sump: envelope {UUIDS['bad']}" in out, "the copy kept whole is the one shown"
    code, out, _ = _run(capsys, "results", root[:8], "--output", "json")
    assert len(json.loads(out)) == 3, "as kept: every document"


def test_sump_show_and_redrive_of_an_id_x_sump_does_not_know_exit_as_every_unknown_id(
    gateway: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def unknown(_self: GatewayClient, envelope_id: str, *_body: Any) -> Any:
        raise GatewayError(f"404: no message {envelope_id!r} in x-sump", 404)

    monkeypatch.setattr(GatewayClient, "sump_entry", unknown)
    monkeypatch.setattr(GatewayClient, "redrive", unknown)
    for argv in (["sump", "show", UUIDS["ok"]], ["sump", "redrive", UUIDS["ok"]]):
        code, out, err = _run(capsys, *argv)
        assert (code, out) == (2, ""), err
        assert err == f"asya: the gateway refused: 404: no message '{UUIDS['ok']}' in x-sump\n"


def test_sump_show_sums_up_the_message_as_results_does_and_json_keeps_it_whole(
    gateway: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """x-sump's copy of task `bad`'s failure: how it ended, why, where it was raised and the last
    frames, without the machine's folders, the input on one line; when it arrived and was redriven."""
    monkeypatch.chdir(tmp_path)
    [doc] = _kept(tmp_path)
    redriven = {"redriven_at": "2026-11-26T10:05:00Z", "redriven_to": "score", "task_id": UUIDS["ok"]}
    shown = {"entry": {**SUMP_ENTRY, **redriven, "key": doc["key"]}, "kept": doc["envelope"]}
    monkeypatch.setattr(GatewayClient, "sump_entry", lambda _self, _id: shown)
    code, out, _ = _run(capsys, "sump", "show", UUIDS["bad"])
    assert code == 0
    assert out.startswith(f"x-sump: envelope {UUIDS['bad']}")
    rows = {cells[1].strip(): cells[2].strip() for line in out.splitlines() if len(cells := line.split("│")) == 4}
    assert rows["status"] == "failed at score"
    assert rows["error"] == "ValueError: review 2 of lamp-2 has no text to score"
    assert rows["where"] == "actors/score.py, line 12, in check", "from the project's folder"
    assert rows["input"] == '{"review": ""}'
    assert (rows["task"], rows["arrived"]) == (UUIDS["ok"][:8], "2026-11-26 11:01:30")
    assert rows["redriven"] == "to score at 2026-11-26 11:05:00"
    assert "… 1 earlier frame" in out
    assert str(tmp_path) not in out
    assert "{" not in out.replace('{"review": ""}', ""), "no raw JSON"
    code, out, _ = _run(capsys, "sump", "show", UUIDS["bad"], "--output", "json")
    assert (code, json.loads(out)) == (0, shown)


def test_sump_show_of_a_copy_that_never_parsed_tells_what_the_list_has_and_the_copy_on_one_line(
    gateway: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = {"entry": {**SUMP_ENTRY, "reason": "MalformedEnvelope", "key": "k"}, "kept": "{not\n json"}
    monkeypatch.setattr(GatewayClient, "sump_entry", lambda _self, _id: shown)
    code, out, _ = _run(capsys, "sump", "show", UUIDS["bad"])
    rows = {cells[1].strip(): cells[2].strip() for line in out.splitlines() if len(cells := line.split("│")) == 4}
    assert (code, rows["status"], rows["reason"]) == (0, "failed at score", "MalformedEnvelope")
    assert rows["kept"] == "{not json"
