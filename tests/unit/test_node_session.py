"""The CDK's Node.js process starts in a session of its own (`asya_local.node_session`), out of the
terminal's foreground process group: Ctrl-C of `asya up` or `asya console` reaches the Python process
alone, which then ends Node.js itself, without "Error on jsii API channel" or a BrokenPipeError."""

from __future__ import annotations

import os
import subprocess
import sys

PROGRAM = """
import os
from asya_local.node_session import node_in_own_session
node_in_own_session()
import aws_cdk
from jsii._runtime import kernel
node = kernel.provider._process._process.pid
print(os.getsid(node) != os.getsid(0), os.getsid(node) == node)
"""


def test_the_cdks_node_process_runs_in_a_session_of_its_own() -> None:
    shown = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120, env=os.environ, check=True
    )
    assert shown.stdout.split() == ["True", "True"], shown.stdout + shown.stderr
