"""YAML a person wrote (a mesh file, a secrets file, a fault spec), read so that a mistake's position
names where it came from: PyYAML calls text handed over as a string `<unicode string>` ("in "<unicode
string>", line 7"), and a stream by its `name`."""

from __future__ import annotations

import io
from typing import Any

import yaml


def named_yaml(text: str, name: str) -> Any:
    """The document `text` holds; a `yaml.YAMLError` names `name` (a file's path) at each position."""
    stream = io.StringIO(text)
    stream.name = name  # what PyYAML's reader calls the stream in its marks
    return yaml.safe_load(stream)
