"""The state file of the local stack: where the stack `asya up` runs is, for the other commands.

`asya up` writes it once the mesh is up, with its own process id, and removes it when it stops; it
holds the gateway's API key, so only its owner may read it. It is `.asya/local.json` in the folder
`asya up` ran in, or the file `ASYA_LOCAL_STATE` names. Every other command finds it the same way a
version control tool finds its folder: `ASYA_LOCAL_STATE`, or the nearest `.asya/local.json` from the
current folder up, so the commands work from any folder of the project. A state file whose `asya up`
has ended (killed, the machine restarted) is stale: the commands say so rather than calling an
endpoint that is gone, and a new `asya up` replaces it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from asya import variables
from asya.names import CONTAINER_SERVICES_OUTPUT
from asya_local import admin_key, issuer
from asya_local.gateway_client import GatewayClient

if TYPE_CHECKING:  # the stack itself (moto, the CDK) is `asya up`'s alone, not every command's
    from asya_local.stack import LocalStack

STATE_NAME = Path(".asya") / "local.json"


class LocalStateError(RuntimeError):
    """No local stack is running, or one already is (the message says which, and what to do)."""


def state_file() -> Path:
    """The state file the commands read: `ASYA_LOCAL_STATE`, the nearest `.asya/local.json` from here
    up, or (none found) the one `asya up` would write here."""
    named = _named()
    if named is not None:
        return named
    here = Path.cwd()
    found = next((folder / STATE_NAME for folder in (here, *here.parents) if (folder / STATE_NAME).is_file()), None)
    return found or here / STATE_NAME


def write_state(stack: LocalStack, config: Path, **more: str) -> Path:
    """Record where the running local stack is, for the other commands; the file written."""
    file = _written_file()
    file.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "pid": str(os.getpid()),
        "endpoint": stack.endpoint,
        "stack": stack.stack_name,
        "namespace": stack.namespace,
        "bucket": stack.results_bucket,
        "tasks_table": stack.outputs.get("TasksTable", ""),
        "spark_batches_table": stack.outputs.get("SparkBatchesTable", ""),
        "container_services": stack.outputs.get(CONTAINER_SERVICES_OUTPUT, ""),  # `asya queues`: tasks running
        "config": str(config.resolve()),
        # the local administrator's key, its secret drawn for this endpoint: what a client of it signs
        # with (real AWS credentials in the environment are refused here, with InvalidClientTokenId)
        "aws_access_key_id": admin_key.credentials(stack.endpoint)["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": admin_key.credentials(stack.endpoint)["AWS_SECRET_ACCESS_KEY"],
        **more,
    }
    if stack.gateway_url is not None:
        state |= {"gateway_url": stack.gateway_url, "api_key": stack.api_key}
        state |= issuer.issuer_state(stack.issuer, stack.gateway_auth)
    file.touch(mode=0o600)  # it holds the API key (and where the local issuer's private key is)
    file.write_text(json.dumps(state, indent=2))
    return file


def refuse_second_stack() -> None:
    """`asya up` here while another still runs from the same state file would take its place in it."""
    file = _written_file()
    state = _read(file)
    if state is not None and _alive(state):
        raise LocalStateError(
            f"a local stack already runs from here: mesh {state.get('namespace')!r} at {state.get('endpoint')} "
            f"(asya up, process {state.get('pid')}; {file}). Use it, stop it with Ctrl-C where it runs, or start "
            f"another from another folder or with ASYA_LOCAL_STATE naming another file"
        )


def running_state() -> dict[str, str]:
    """The running stack's state, or a `LocalStateError` that says how to start one."""
    file = state_file()
    state = _read(file)
    if state is None and _named() is not None:
        raise LocalStateError(
            f"no local stack found at {file}, the file ASYA_LOCAL_STATE names: set it to the .asya/local.json "
            "of the project's folder, or start one with `asya up`"
        )
    if state is None:
        raise LocalStateError(
            f"no local stack found from this folder upward (no {STATE_NAME} in {Path.cwd()} or above): run the "
            f"command in the project's folder (or set ASYA_LOCAL_STATE to its {STATE_NAME}), or start one with "
            "`asya up`"
        )
    if not _alive(state):
        raise LocalStateError(
            f"the local stack recorded in {file} is no longer running (its asya up, process {state.get('pid')}, "
            "has ended): start it again with `asya up`"
        )
    return state


def read_state() -> dict[str, str] | None:
    """The state, if a stack runs (a stale file is no stack)."""
    state = _read(state_file())
    return state if state is not None and _alive(state) else None


def running_for(config: Path) -> tuple[Path, dict[str, str]] | None:
    """The state file and state of an `asya up` of this mesh file still running, if there is one: the
    file `ASYA_LOCAL_STATE` names, or the one beside the mesh file (where `asya up` run in the
    project's folder writes it). The tests' `asya_stack` fixture uses it rather than start another."""
    file = _named() or config.resolve().parent / STATE_NAME
    state = _read(file)
    if state is None or not _alive(state) or state.get("config") != str(config.resolve()):
        return None
    return file, state


def gateway_of(state: dict[str, str], token: str | None = None) -> GatewayClient:
    """The local stack's gateway, with its API key (and a bearer `token`, for a mesh whose gateway
    verifies the caller's JWT)."""
    if "gateway_url" not in state:
        raise LocalStateError("the running stack serves no gateway (its mesh deploys none)")
    return issuer.local_gateway(state["gateway_url"], state["api_key"], issuer.of_state(state), token)


def worker_log_folder() -> Path:
    """Where `asya up` keeps the workers' log: beside the state file."""
    return _written_file().parent


def _written_file() -> Path:
    return _named() or STATE_NAME


def _named() -> Path | None:
    """The file `ASYA_LOCAL_STATE` names, if it is set."""
    named = variables.LOCAL_STATE.read(os.environ)
    return Path(named).expanduser().resolve() if named is not None else None


def _read(file: Path) -> dict[str, str] | None:
    """The state in `file`; its endpoint's administrator key is remembered for `roles.local_client`."""
    try:
        state = dict(json.loads(file.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if {"endpoint", "aws_access_key_id", "aws_secret_access_key"} <= state.keys():
        admin_key.remember(
            state["endpoint"],
            {"AWS_ACCESS_KEY_ID": state["aws_access_key_id"], "AWS_SECRET_ACCESS_KEY": state["aws_secret_access_key"]},
        )
    return state


def _alive(state: dict[str, str]) -> bool:
    """Whether the `asya up` that wrote the state still runs (a file without a process id, written by
    a test or an older `asya up`, is taken at its word)."""
    pid = state.get("pid")
    if pid is None:
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True
