"""The CDK's Node.js process in a session of its own, so that a terminal's Ctrl-C does not end it.

The CDK for Python is a client of a Node.js process (jsii's kernel), started with the first import of
`aws_cdk` and told to exit by an `atexit` hook, which writes to its stdin. In the terminal's
foreground process group that process gets the terminal's Ctrl-C too and dies at once, and the hook
then fails with a `BrokenPipeError` traceback as `asya up` or `asya console` exits. jsii starts it
with `subprocess.Popen` and no way to ask for a session, so jsii's module is handed a `subprocess`
whose `Popen` starts one. Node still ends with this process however it ends: jsii's kernel exits when
its stdin closes.
"""

from __future__ import annotations

import subprocess
from typing import Any


class _InOwnSession:
    """The `subprocess` module as jsii's kernel provider sees it: its `Popen` starts a new session."""

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    @staticmethod
    def Popen(*args: Any, **kwargs: Any) -> subprocess.Popen[Any]:  # noqa: N802 - the name jsii calls
        return subprocess.Popen(*args, **kwargs, start_new_session=True)


def node_in_own_session() -> None:
    """Call before the first import of `aws_cdk` (which starts the process)."""
    from jsii._kernel.providers import process

    process.subprocess = _InOwnSession()  # type: ignore[assignment, attr-defined]
