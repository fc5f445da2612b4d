"""The two actors of the own-app example. Plain Python: no AWS, no asya imports needed."""

from __future__ import annotations

from typing import Any

_KINDS = {"csv": "table", "json": "document", "jpg": "image", "png": "image", "txt": "text"}


def inspect(payload: dict[str, Any]) -> dict[str, Any]:
    """What the upload is, from the S3 event the rule put in the payload: its extension and size."""
    key = str(payload.get("key", ""))
    extension = key.rsplit(".", 1)[-1].lower() if "." in key else ""
    return {**payload, "extension": extension, "empty": int(payload.get("size") or 0) == 0}


def label(payload: dict[str, Any]) -> dict[str, Any]:
    """The object's kind; the result lands in the mesh's results bucket through x-sink."""
    kind = "empty" if payload.get("empty") else _KINDS.get(payload.get("extension", ""), "other")
    return {**payload, "kind": kind}
