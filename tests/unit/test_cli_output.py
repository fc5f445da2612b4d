"""What the `asya` commands print where no terminal reads it (a pipe, a CI log): a refusal is one line
on stderr however narrow the terminal the variables describe, and stdout holds only the answer."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from asya_local.screen import screen

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
