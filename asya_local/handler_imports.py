"""`asya check`'s import of every Lambda actor's handler, where its local worker would import it.

A handler string that names nothing (`actors.splitt`), or a module that imports a library the actor
does not declare, passes every rule of the mesh file and `cdk synth` alike, and then fails the actor's
init: its envelopes wait in its queue until SQS redrives them to x-sump. So the check resolves each
handler in a process with the actor's code folder and libraries and nothing else (the import path of
its local worker, `asya_local.runtime`), the way the sidecar resolves it at the init
(`asya_local.functions.handler_probe`): one process per distinct path, importing every handler on it.

Nothing is built for this: an actor whose libraries `asya up` has not built yet on this machine is
skipped, and said to be (building them may take minutes; the check that follows builds the Lambda
platform's, which cannot be imported here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from asya_cdk.loaded_mesh import LoadedMesh
from asya_local.functions.handler_probe import BROKEN, MODULE
from asya_local.runtime import FunctionPython, built_actor_pythons

PROBE_SECONDS = 120.0  # a module that loads a model at import may take a while; one that hangs does not stop the check


@dataclass
class HandlerFindings:
    """What importing the handlers found: `problems` fail the check, `warnings` do not; each line
    starts with the mesh field it is about (`actors.split.handler: ...`)."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def import_handlers(mesh: LoadedMesh) -> HandlerFindings:
    findings = HandlerFindings()
    groups: dict[tuple[Path, ...], list[str]] = defaultdict(list)  # an import path → the actors on it
    for actor, python in built_actor_pythons(mesh).items():
        if isinstance(python, FunctionPython):
            groups[python.path].append(actor)
        else:
            findings.warnings.append(f"actors.{actor}.handler: not imported to check it: {python}")
    for path, actors in groups.items():
        specs = sorted({mesh.config.actors[actor].handler for actor in actors})
        answers, failure = _probe(FunctionPython(path), specs)
        for actor in actors:
            where = f"actors.{actor}.handler"
            if failure is not None:
                findings.warnings.append(f"{where}: not imported to check it: {failure}")
                continue
            found = answers.get(mesh.config.actors[actor].handler)
            if found is None:
                continue
            if found["kind"] == BROKEN:
                findings.problems.append(f"{where}: {found['problem']}")
            else:
                findings.warnings.append(
                    f"{where}: {found['problem']} (on Lambda this fails the actor's init too, unless the "
                    "module needs what only its deployed environment has: its secrets, files or variables)"
                )
    return findings


def _probe(python: FunctionPython, specs: list[str]) -> tuple[dict[str, dict[str, str] | None], str | None]:
    """Each handler string's answer from one probe process, or why the process gave none."""
    code = python.path[0]
    try:
        finished = subprocess.run(
            [sys.executable, "-S", "-m", MODULE, json.dumps(specs)],
            capture_output=True,
            text=True,
            cwd=str(code),
            env=python.environment(dict(os.environ)),
            timeout=PROBE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {}, f"importing its module took more than {PROBE_SECONDS:.0f} s"
    lines = finished.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1]), None
    except (IndexError, json.JSONDecodeError):
        last = (finished.stderr.strip().splitlines() or [f"exit code {finished.returncode}"])[-1]
        return {}, f"the import ended the process ({last})"
