"""A restart keeps the previous run's worker log as `<ns>.log.1` instead of overwriting it."""

from __future__ import annotations

from pathlib import Path

from asya_local.worklog import WorkerLog


def test_a_new_worker_log_keeps_the_previous_runs_as_dot_1(tmp_path: Path) -> None:
    path = tmp_path / "reviews.log"
    (tmp_path / "reviews.log.1").write_text("the run before last\n")
    path.write_text("Traceback of the run just stopped\n")

    log = WorkerLog(path, lambda _source, _line: None)
    log("prep", "a line of the new run")
    log.close()

    assert log.previous == tmp_path / "reviews.log.1"
    assert log.previous.read_text() == "Traceback of the run just stopped\n"
    assert "a line of the new run" in path.read_text()
    assert "Traceback" not in path.read_text()


def test_a_first_run_or_an_empty_log_keeps_nothing(tmp_path: Path) -> None:
    first = WorkerLog(tmp_path / "a.log", lambda _source, _line: None)
    first.close()
    again = WorkerLog(tmp_path / "a.log", lambda _source, _line: None)  # the first wrote no line
    again.close()
    assert (first.previous, again.previous) == (None, None)
    assert not (tmp_path / "a.log.1").exists()
