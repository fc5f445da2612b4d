"""The worker log across a stack's life: a restart keeps the previous run's as `<ns>.log.1` (and two
before it) instead of overwriting it, and once the stack stops, the workers' last lines go to the file
only."""

from __future__ import annotations

from pathlib import Path

from asya_local.worklog import WorkerLog


def test_a_new_worker_log_keeps_the_previous_runs_as_dot_1_and_two_before_it(tmp_path: Path) -> None:
    path = tmp_path / "reviews.log"
    for number, run in ((1, "the run before last"), (2, "two runs back"), (3, "three runs back")):
        (tmp_path / f"reviews.log.{number}").write_text(f"{run}\n")
    path.write_text("Traceback of the run just stopped\n")

    log = WorkerLog(path, lambda _source, _line: None)
    log("prep", "a line of the new run")
    log.close()

    assert log.previous == tmp_path / "reviews.log.1"
    assert log.previous.read_text() == "Traceback of the run just stopped\n"
    kept = [(tmp_path / f"reviews.log.{number}").read_text() for number in (2, 3)]
    assert kept == ["the run before last\n", "two runs back\n"], "the oldest of three goes"
    assert not (tmp_path / "reviews.log.4").exists()
    assert "a line of the new run" in path.read_text()
    assert "Traceback" not in path.read_text()


def test_a_first_run_or_an_empty_log_keeps_nothing(tmp_path: Path) -> None:
    first = WorkerLog(tmp_path / "a.log", lambda _source, _line: None)
    first.close()
    again = WorkerLog(tmp_path / "a.log", lambda _source, _line: None)  # the first wrote no line
    again.close()
    assert (first.previous, again.previous) == (None, None)
    assert not (tmp_path / "a.log.1").exists()


def test_once_hushed_errors_go_to_the_file_only(tmp_path: Path) -> None:
    shown: list[str] = []
    log = WorkerLog(tmp_path / "a.log", lambda _source, line: shown.append(line))
    log("prep", "execution environment exited with code 1; starting a new one")
    log.hush()  # Ctrl-C: what the stop does is said on screen, not what the workers say as they end
    log("prep", "execution environment exited with code -15; starting a new one")
    log.close()
    assert shown == ["execution environment exited with code 1; starting a new one"]
    assert "code -15" in (tmp_path / "a.log").read_text()
