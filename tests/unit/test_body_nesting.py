"""How deep a body nests is counted without parsing it (`asya_gateway.nesting`): brackets in strings
do not count, the bound itself is taken, and hostile text costs one pass."""

from __future__ import annotations

import time

import pytest

from asya_gateway.nesting import MAX_NESTING, too_deep


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    ("body", "deep"),
    [
        (nested(MAX_NESTING), False),
        (nested(MAX_NESTING + 1), True),
        (b'{"a": ' + nested(MAX_NESTING - 1) + b"}", False),
        (b'{"a": ' + nested(MAX_NESTING) + b"}", True),
        (b'{"text": "' + b"[" * 5_000 + b'"}', False),  # brackets in a string are text
        (b'{"text": "\\"' + b"[" * 5_000 + b'"}', False),  # after an escaped quote, still in the string
        (b"[" * 100, True),  # never closed: still deep
        (b'"' + b"[" * 100, True),  # an unclosed string: not JSON, counted as it comes
        (b"[]" * 10_000, False),  # many brackets, none deep
        (b"", False),
    ],
    ids=[
        "at the bound",
        "past it",
        "an object at the bound",
        "an object past it",
        "brackets in a string",
        "an escaped quote",
        "unclosed",
        "an unclosed string",
        "wide, not deep",
        "empty",
    ],
)
def test_nesting_is_counted_by_the_brackets_outside_strings(body: bytes, deep: bool) -> None:
    assert too_deep(body) is deep


def test_a_large_hostile_body_is_counted_quickly() -> None:
    bodies = [b"[]" * 3_000_000, b'"' + b'\\"' * 3_000_000, b'"a",' * 1_500_000, nested(3_000_000)]
    started = time.monotonic()
    for body in bodies:
        too_deep(body)
    assert time.monotonic() - started < 5.0
