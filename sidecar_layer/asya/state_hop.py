"""Which hop a handler's state writes belong to (`asya.state`), so a hop that runs again writes nothing twice.

The sidecar marks the hop before it calls the handler and unmarks it after. Each write of a key is
tagged with a token made of the hop's identity (`asya.dedup.Hop`: envelope id, route position,
attempt, redrives) and how many writes of that key the hop applied before it: the n-th applied write
of a key in a rerun of the hop carries the same token as in the first run, and the state item
remembers the tokens of its recent writes, so the rerun's write is recognised and skipped.

A module-level mark, not a context variable: the sidecar runs one hop at a time per process, and a
handler's own threads (or the worker thread a handler runs in off the main thread, `asya.timeouts`)
would not see a context variable set in the sidecar's thread.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any


class _Mark:
    """The hop being run: the actor's store (`asya.state_store.ActorState`), its token's stem, the
    writes it made per key, and the items it read."""

    __slots__ = ("seen", "stem", "store", "writes")

    def __init__(self, stem: str, store: Any) -> None:
        self.store = store
        self.stem = stem
        self.writes: dict[str, int] = {}
        self.seen: dict[str, Any] = {}  # key -> the state item as last read or written in this hop


_current: _Mark | None = None


def begin(hop_key: Mapping[str, Any], store: Any = None) -> None:
    """Mark the hop `hop_key` (`Hop.key_of`) as the one the handler's writes belong to, and `store` as
    the state its handler's `asya.state` calls use: the running actor's, even where several actors'
    sidecars share a process (`asya_local.testing.MeshHarness`)."""
    global _current
    identity = "|".join(str(value) for value in hop_key.values())
    _current = _Mark(hashlib.blake2b(identity.encode(), digest_size=9).hexdigest(), store)


def store() -> Any:
    """The running actor's state store; None outside a hop."""
    return None if _current is None else _current.store


def end() -> None:
    """No hop is running: a write now (module import, a test) is an ordinary write, tagged with nothing."""
    global _current
    _current = None


def next_token(key: str) -> str | None:
    """The token of this hop's next write of `key`; None outside a hop. The count moves on only when
    the write is applied (`applied`): a compare-and-set that lost (or a write that gave up) is no write
    of the hop's, so that a rerun, which may not lose where its first run lost, tags its n-th applied
    write as the first run tagged its own."""
    mark = _current
    if mark is None:
        return None
    return f"{mark.stem}.{mark.writes.get(key, 0) + 1}"


def applied(key: str) -> None:
    """This hop's write of `key` was applied (or found applied by a first run): the next one counts on."""
    if _current is not None:
        _current.writes[key] = _current.writes.get(key, 0) + 1


def seen(key: str) -> Any:
    """The item this hop last read or wrote for `key` (None: none, or no hop): a write after a read in
    the same hop needs no second read, its condition on the version catches any writer in between."""
    return None if _current is None else _current.seen.get(key)


def remember(key: str, item: Any) -> None:
    if _current is not None:
        _current.seen[key] = item
