"""The terminal every `asya` command prints to, and how a task's status is coloured there.

In a terminal Rich lays out at the terminal's width. Anywhere else (a pipe, a file, a CI log) tables
are laid out 160 columns wide, and a line of text is never broken: a message is one line however
long, so that `grep` and a log viewer find it whole. A refusal (`asya: ...`) goes to stderr, so that
what a command answers on stdout (`--output json`) is only its answer.
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.text import Text

STATUS_STYLES = {"succeeded": "green", "failed": "red", "canceled": "yellow", "paused": "magenta", "running": "cyan"}
UNBOUNDED_WIDTH = 160  # tables' width where no terminal says one: logs and CI, no 80-column squeeze


def screen(stderr: bool = False, file: TextIO | None = None) -> Console:
    """A console writing to `file`, or to stdout (stderr) as it is at each print, so that a test
    capturing it sees what it prints: a terminal's width on a terminal, else unbroken lines."""
    stream = file or (sys.stderr if stderr else sys.stdout)
    if stream.isatty():
        return Console(stderr=stderr, file=file)
    return Console(stderr=stderr, file=file, width=UNBOUNDED_WIDTH, soft_wrap=True)


console = screen()
errors = screen(stderr=True)


def refuse(message: str) -> None:
    """`asya: message` on stderr, in red, as is: one line (a terminal folds it, Rich never breaks it),
    whatever brackets the message holds."""
    errors.print(f"asya: {message}", style="red", markup=False, highlight=False, soft_wrap=True)


def status_text(status: str, shown: str | None = None) -> Text:
    """`shown` (the status itself by default) in the status's colour."""
    return Text(status if shown is None else shown, style=STATUS_STYLES.get(status, ""))
