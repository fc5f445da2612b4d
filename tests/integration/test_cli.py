"""The `asya` command as a user runs it: up, send (through the gateway), status, watch, results,
queues, and a clean stop on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx2
import pytest

from asya.names import TASKS_TABLE, resource_name
from asya.task_store import TaskStore
from asya_local.endpoint.process import free_port
from asya_local.roles import local_client
from tests.support.stack import MESH

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]  # a whole `asya up` per test: slow on a busy machine
ASYA = [sys.executable, "-m", "asya_local.cli"]


def _asya(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ASYA, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_up_send_watch_status_results_queues_and_stop(tmp_path: Path) -> None:
    port = free_port()
    # the checkout's own packages first (a worktree's, when the editable install is another checkout's)
    paths = [str(Path(__file__).resolve().parents[2]), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    up = subprocess.Popen(
        [*ASYA, "up", "--config", str(MESH), "--port", str(port)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        state = tmp_path / ".asya" / "local.json"
        deadline = time.monotonic() + 90
        while not state.exists() and time.monotonic() < deadline and up.poll() is None:
            time.sleep(0.2)
        assert state.exists(), "asya up did not come up"
        written = json.loads(state.read_text())
        assert written["endpoint"] == f"http://127.0.0.1:{port}"
        assert written["gateway_url"].startswith("http://127.0.0.1:")
        assert written["api_key"]
        console = httpx2.get(written["console_url"], timeout=10)
        assert console.status_code == 200
        assert "Mesh itest" in console.text, "asya up serves the console"

        envelope_id = _tasks_through_the_gateway(tmp_path)
        _a_task_past_the_newest_hundred_is_found_by_its_short_id(tmp_path, written, envelope_id)
        _a_body_that_never_parsed_is_fixed_and_redriven(tmp_path, written)

        _results_are_summed_up_and_kept_as_json(tmp_path, envelope_id)

        queues = _asya(tmp_path, "queues")
        assert queues.returncode == 0
        assert "asya-itest-prep" in queues.stdout

        unknown = _asya(tmp_path, "send", "{}", "--flow", "nope")
        assert unknown.returncode == 2
        assert "unknown flow 'nope'" in unknown.stderr
    finally:
        up.send_signal(signal.SIGTERM)
        output, _ = up.communicate(timeout=30)
    assert up.returncode == 0, output
    assert f"is up at http://127.0.0.1:{port}" in output
    assert f"gateway: {written['gateway_url']}/api/v1   API key: {written['api_key']}" in output
    assert f"console: {written['console_url']}" in output
    key, secret = written["aws_access_key_id"], written["aws_secret_access_key"]
    assert (key, len(secret)) == ("asya-local", 43), "the administrator's secret is drawn for the stack"
    assert f"its clients sign with: AWS_ACCESS_KEY_ID={key} AWS_SECRET_ACCESS_KEY={secret}" in output
    assert "worker log: .asya/itest.log" in output
    log = (tmp_path / ".asya" / "itest.log").read_text()
    assert " prep | 1 in, 1 done" in log, "each actor's activity is logged, in the worker log"
    assert "1 in, 1 done" not in output, "not on screen"
    assert "reached x-sump" in output, "errors are shown on screen too"
    assert not state.exists(), "the state file goes with the stack"


def _results_are_summed_up_and_kept_as_json(cwd: Path, envelope_id: str) -> None:
    deadline = time.monotonic() + 30
    while (shown := _asya(cwd, "results", envelope_id)).returncode != 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert shown.returncode == 0, shown.stdout
    assert "succeeded" in shown.stdout, "a summary by default"
    assert '"label": "even"' in shown.stdout
    raw = _asya(cwd, "results", envelope_id, "--output", "json")
    assert any(doc["status"]["phase"] == "succeeded" for doc in json.loads(raw.stdout))


def _tasks_through_the_gateway(cwd: Path) -> str:
    """send, watch and status as a user runs them; returns the id of a task that succeeded."""
    sent = _asya(cwd, "send", '{"n": 4}', "--flow", "pipeline")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    envelope_id = sent.stdout.strip()

    watched = _asya(cwd, "watch", envelope_id)
    assert watched.returncode == 0, watched.stdout + watched.stderr
    assert "succeeded" in watched.stdout
    assert "100%" in watched.stdout, "the bar ends full"

    status = _asya(cwd, "status", envelope_id[:8])  # the short id the tables show
    assert status.returncode == 0, status.stdout
    assert f"task {envelope_id}" in status.stdout
    assert "succeeded" in status.stdout
    assert "prep → infer → post" in status.stdout
    assert '{"n": 4}' in status.stdout, "the input it was started with"

    routed = _asya(cwd, "send", '{"n": 4}', "--route", "prep,infer,post")
    assert routed.returncode == 0, routed.stdout + routed.stderr

    waited = _asya(cwd, "send", '{"n": 6}', "--flow", "pipeline", "--wait", "30")  # past one request's 25 s
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert "succeeded" in waited.stdout
    assert '"label": "even"' in waited.stdout, "the result is shown"
    still = _asya(cwd, "send", '{"sleep": 5}', "--flow", "sleepy", "--wait", "0.5")
    assert still.returncode == 3, still.stdout + still.stderr
    assert "still " in still.stdout
    assert "asya watch" in still.stdout

    failing = _asya(cwd, "send", '{"n": 1}', "--flow", "failing")
    failed_id = failing.stdout.strip()
    failed = _asya(cwd, "watch", failed_id)
    assert failed.returncode == 1, failed.stdout
    assert "failed" in failed.stdout
    _a_failed_task_runs_again(cwd, failed_id)

    deadline = time.monotonic() + 30  # x-sump keeps the failure after x-sink has recorded it
    sump_list = ("sump", "list", "--reason", "HandlerError", "--since", "1h", "--output", "json")
    while failed_id not in (listed := _asya(cwd, *sump_list)).stdout:
        assert time.monotonic() < deadline, listed.stdout + listed.stderr
        time.sleep(0.5)
    [kept] = [entry for entry in json.loads(listed.stdout)["entries"] if entry["id"] == failed_id]
    assert (kept["error_type"], kept["message"].split(":")[0]) == ("ValueError", "boom")
    redriven = _asya(cwd, "sump", "redrive", "--reason", "HandlerError", "--to", "post")
    assert redriven.returncode == 0, redriven.stdout + redriven.stderr
    assert f"{failed_id}: redriven to post (redrive 1)" in redriven.stdout
    rewatched = _asya(cwd, "watch", failed_id)
    assert rewatched.returncode == 0, rewatched.stdout

    missing = _asya(cwd, "status", "no-such-task")
    assert missing.returncode == 2
    assert "no task starts with 'no-such-task': give its whole id" in missing.stderr
    unknown = _asya(cwd, "status", "00000000-0000-4000-8000-000000000000")
    assert unknown.returncode == 2, "an unknown id, whole or short, is the same mistake"
    assert "no task 00000000-0000-4000-8000-000000000000" in unknown.stderr
    return envelope_id


def _a_task_past_the_newest_hundred_is_found_by_its_short_id(cwd: Path, state: dict[str, str], task_id: str) -> None:
    """110 newer records, written as the gateway writes a task's (straight to the stack's table, so no
    actor runs them), push the task out of the newest 100 listed; its short id, typed in capitals,
    still names it."""
    credentials = {
        "AWS_ACCESS_KEY_ID": state["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": state["aws_secret_access_key"],
    }
    dynamodb = local_client("dynamodb", state["endpoint"], credentials)  # the administrator's, which asya up wrote
    store = TaskStore(resource_name("itest", TASKS_TABLE), client=dynamodb)
    for _ in range(110):
        store.create({"id": str(uuid.uuid4())})
    newest = httpx2.get(
        f"{state['gateway_url']}/api/v1/mesh",
        params={"limit": 100},
        headers={"x-api-key": state["api_key"]},
        timeout=30,
    )
    assert task_id not in {task["id"] for task in newest.json()["tasks"]}, "not among the newest 100"
    status = _asya(cwd, "status", task_id[:8].upper())
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"task {task_id}" in status.stdout


def _a_body_that_never_parsed_is_fixed_and_redriven(cwd: Path, state: dict[str, str]) -> None:
    """A body sent straight to a queue that is not an envelope: x-sump keeps it under its SQS message
    id; the user writes the fixed envelope and redrives it with the CLI; it travels to its result."""
    credentials = {
        "AWS_ACCESS_KEY_ID": state["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": state["aws_secret_access_key"],
    }
    sqs = local_client("sqs", state["endpoint"], credentials)  # as a producer signs, with the key asya up wrote
    url = sqs.get_queue_url(QueueName="asya-itest-prep")["QueueUrl"]
    message_id = sqs.send_message(QueueUrl=url, MessageBody='{"payload": {"n": 2}')["MessageId"]
    kept_id = f"sqs-{message_id}"
    deadline = time.monotonic() + 30
    while kept_id not in (listed := _asya(cwd, "sump", "list", "--reason", "ParseError", "--output", "json")).stdout:
        assert time.monotonic() < deadline, listed.stdout + listed.stderr
        time.sleep(0.5)
    fixed = cwd / "fixed.json"
    fixed.write_text(json.dumps({"route": {"prev": [], "curr": "prep", "next": ["post"]}, "payload": {"n": 2}}))
    redriven = _asya(cwd, "sump", "redrive", kept_id, "--envelope", f"@{fixed}")
    assert redriven.returncode == 0, redriven.stdout + redriven.stderr
    assert f"{kept_id}: redriven to prep (redrive 1)" in redriven.stdout
    deadline = time.monotonic() + 30
    while '"done": true' not in (shown := _asya(cwd, "results", kept_id, "--output", "json")).stdout:
        assert time.monotonic() < deadline, shown.stdout + shown.stderr
        time.sleep(0.5)
    assert '"prepped": true' in shown.stdout


def test_up_refuses_a_bad_mesh_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "mesh.yaml"
    bad.write_text("namespace: x\nactors:\n  a: {handler: m.f, timeout: forever}\n")
    result = _asya(tmp_path, "up", "--config", str(bad), "--port", "0")
    assert result.returncode == 2
    assert "actors.a.timeout" in result.stderr
    assert "is not a duration" in result.stderr


def test_commands_without_a_running_stack_say_so(tmp_path: Path) -> None:
    result = _asya(tmp_path, "queues")
    assert result.returncode == 2
    assert "start one with `asya up`" in result.stderr


def _a_failed_task_runs_again(cwd: Path, failed_id: str) -> None:
    """`asya rerun` with an edited input: a new task, naming the one it runs again, that succeeds."""
    fixed = json.dumps({"n": 1, "fixed_when": __file__})  # a file that exists: `boom` lets it through
    again = _asya(cwd, "rerun", failed_id[:8], "--payload", fixed, "--wait", "30")
    assert again.returncode == 0, again.stdout + again.stderr
    assert failed_id in again.stdout, "the new task names the task it runs again"
    assert "succeeded" in again.stdout, "with the edited input, which `boom` lets through"
    sleeping = _asya(cwd, "send", '{"sleep": 5}', "--flow", "sleepy").stdout.strip()
    refused = _asya(cwd, "rerun", sleeping)
    assert refused.returncode == 1, refused.stdout
    [refusal] = refused.stderr.splitlines()  # one line, however long
    assert "only a task that has ended is run again" in refusal
