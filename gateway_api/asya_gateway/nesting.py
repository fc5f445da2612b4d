"""How deep a request's JSON body nests, told before anything parses it (docs/status.md, "Request
bodies").

Every door reads a body with code that walks it (validation, A2A's ProtoJSON numbers, a flow's
program), some of it recursively: a body nested a thousand levels deep, which orjson still parses,
would end in a RecursionError, a 502. So the gateway refuses a body whose arrays and objects nest
deeper than `MAX_NESTING` with a 400, whatever the door (REST, MCP, A2A). The count skips strings (a
`[` in a text is not nesting) and reads only the brackets, without building anything: a body with few
brackets is passed at the cost of counting them."""

from __future__ import annotations

import re

MAX_NESTING = 64  # levels of arrays and objects a body may nest; a payload deeper than that is data to keep, not send
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)  # possessive: an unclosed string costs one pass
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_OPENING = frozenset(b"[{")


def too_deep(body: bytes, bound: int = MAX_NESTING) -> bool:
    """Whether the JSON text's arrays and objects nest deeper than `bound`. Text that is not JSON is
    counted as it comes: its parser refuses it anyway."""
    if body.count(b"[") + body.count(b"{") <= bound:
        return False
    depth = 0
    for bracket in _STRING.sub(b"", body).translate(None, _NOT_BRACKETS):
        depth += 1 if bracket in _OPENING else -1
        if depth > bound:
            return True
    return False
