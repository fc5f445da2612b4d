"""An actor's durable state, for its handler: `from asya import state` (docs/actors.md, "State").

    count = state.get("calls", 0)                   # the value, or the default
    state.put("calls", count + 1)                   # last writer wins
    value, version = state.get_versioned("calls")
    state.put("calls", value + 1, if_version=version)  # compare-and-set: StateConflict if it lost
    state.delete("calls")

Keys are strings, values anything JSON takes; each actor sees only its own keys (the mesh file's
`state:` on the actor makes the table and the grant). A hop that runs again after its worker was
killed does not apply its writes twice (`asya.state_store`). The store is the running hop's actor's,
which its sidecar built from its configuration; outside a hop, one built from the environment, or
the one `use` puts in its place (tests).
"""

from __future__ import annotations

import os
from typing import Any

from asya import state_hop
from asya.state_store import ActorState, StateConflict, StateError, StateTooLarge
from asya.variables import ACTOR, STATE_BUCKET, STATE_TABLE, STATE_TTL_DAYS

__all__ = ["ActorState", "StateConflict", "StateError", "StateTooLarge", "delete", "get", "get_versioned", "put", "use"]

_store: ActorState | None = None


def get(key: str, default: Any = None) -> Any:
    """The key's value, or `default` if it was never written or was deleted."""
    return _actor_state().get(key, default)


def get_versioned(key: str) -> tuple[Any, int]:
    """The key's value (None if absent) and its version (0 if never written), for `put(..., if_version=)`."""
    return _actor_state().get_versioned(key)


def put(key: str, value: Any, *, if_version: int | None = None) -> int:
    """Write the key (last writer wins), or with `if_version` only if no one wrote it since that version
    (else `StateConflict`); returns its new version."""
    return _actor_state().put(key, value, if_version=if_version)


def delete(key: str, *, if_version: int | None = None) -> int:
    """Delete the key; `if_version` as for `put`."""
    return _actor_state().delete(key, if_version=if_version)


def use(store: ActorState | None) -> None:
    """Use `store` for this process's state calls (None: build it from the environment again)."""
    global _store
    _store = store


def _actor_state() -> ActorState:
    """The running hop's actor's store (`asya.state_hop`), else the one `use` set, else one built from
    the environment (a handler called outside the sidecar)."""
    global _store
    running: ActorState | None = state_hop.store()
    if running is not None:
        return running
    if _store is None:
        table = STATE_TABLE.read(os.environ)
        if table is None:
            raise StateError(
                "this actor has no state: set `state: true` on it in the mesh file (actors.<name>.state) "
                f"and deploy again ({STATE_TABLE.name} is not set)"
            )
        _store = ActorState(
            table,
            ACTOR.require(os.environ),
            bucket=STATE_BUCKET.read(os.environ),
            ttl_days=STATE_TTL_DAYS.read(os.environ),
        )
    return _store
