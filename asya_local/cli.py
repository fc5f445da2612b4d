"""`asya`: run a mesh on this machine and work with it.

    asya up      [--config FILE] [--port N] [--faults FILE|SPEC]   start the local stack; Ctrl-C stops it
    asya send    PAYLOAD (--flow NAME | --route a,b) [--count N] [--each]   create tasks; prints their ids
    asya tasks   [--status S|all] [--flow F] [--actor A] [--since T] [--until T] [--cursor C | --all]
                                                 tasks newest first, every status by default, page by page
    asya status  ID                              a task as the gateway reports it
    asya watch   ID                              follow a task live until it ends
    asya results ID                              what x-sink / x-sump kept for an envelope, summed up
    asya cancel  ID / asya resume ID JSON        cancel a task; give a paused one what it asked for
    asya queues  [--watch]                       queue depths
    asya demo    [--config FILE] [--inputs FILE] start, send the example inputs, watch, print, stop
    asya init    [DIR] [--namespace NS] [--cdk]   a new mesh project: mesh.yaml, actors, tests; never overwrites
    asya check   [--config FILE] [--account]     AWS's limits checked, and what `cdk deploy` would create
    asya schema  [--output FILE]                 the mesh file's JSON Schema, for editors (docs/mesh.md)
    asya synth | diff | deploy | destroy [--config FILE] [-- CDK ARGS]   the CDK's commands, from this folder
                                                 (deploy: asya check --account and Docker for image actors
                                                 first; --no-account skips the account)
    asya smoke   --stack NAME [--flow NAME]...    one task per flow through a deployed mesh (AWS or local)
    asya console [--stack NAME] [--port N]       the mesh, its queues and tasks, live, in a browser
    asya secrets set NAME [VALUE] [--config FILE]  a secret's local value (stdin if VALUE is left out)
    asya flow show FLOW [--config FILE] [--image PATH]  a flow's route, or its program in words and drawn
    asya token   [--subject S] [--scope SCOPE]... [--role R]... [--client-credentials] [--stack NAME]
                                                 a token for a mesh with gateway.auth: jwt: the local
                                                 issuer's, or a deployed Cognito pool's machine client's

`tasks`, `status`, `watch`, `results`, `sump list` and `sump show` take `--output json`: their answer as JSON alone
on stdout. Every command exits by one table (`asya_local.answers`, docs/local-stack.md "Exit status"):
0 done or succeeded, 1 failed, canceled or not done, 2 a mistake or an unknown id, 3 not ended.
`send`, `tasks`, `status`, `watch`, `results`, `cancel`, `resume`, `rerun`, `queues`, `sump` and
`console` take `--stack NAME [--token T]`: a deployed mesh, found from its stack's outputs and reached
with the caller's AWS credentials (`asya_local.discovery`), instead of the local stack.

`asya up`, `asya demo` and `asya console` are `asya_local.local_cli`; `asya up` writes
`.asya/local.json` (endpoint, namespace, bucket, gateway URL and API key, console URL, worker log, its
own process) so the other commands find it, from any folder below (`asya_local.local_state`).
Tasks are created and followed through the status gateway's API, as any
client would on AWS. Argument parsing is the standard library's argparse (`asya_local.arguments`: a
mistake is one line); HTTP is `httpx2`; tables,
live views and progress bars are `rich`. Every parser is built from light modules; a command whose
module loads the CDK (which starts Node.js), moto, Flask or the drawing imports it only when it runs
(`asya_local.mesh_parsers`), so `asya status` and `asya --help` start in half a second. The parsers
and commands are `asya_local.commands`; this module loads them only when the command line asks for
more than `asya --version`, which answers in a tenth of a second (docs/performance.md, "The CLI's
start")."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from asya_local.command import main

if TYPE_CHECKING:
    from asya_local.arguments import Parser

__all__ = ["main", "parser"]


def parser() -> Parser:
    """Every command's parser (`asya_local.commands`), loaded when asked for: `asya --version` loads none."""
    from asya_local.commands import parser as every_command

    return every_command()


if __name__ == "__main__":
    sys.exit(main())
