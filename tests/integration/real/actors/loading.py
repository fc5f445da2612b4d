"""Loads its files once, when its class is created: they are on disk before that."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class Loader:
    def __init__(self) -> None:
        self.weights = json.loads(Path(os.environ["WEIGHTS_PATH"]).read_text())["weights"]
        vocab = Path(os.environ["VOCAB_DIR"])
        self.words = sorted(word for file in vocab.glob("*.txt") for word in file.read_text().split())

    def describe(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {**payload, "weight_sum": sum(self.weights), "words": self.words}
