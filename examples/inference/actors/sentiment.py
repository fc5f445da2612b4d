"""The sentiment scorer: a small logistic regression (`model/weights.json`, trained by `model/train.py`)
that runs on a GPU when the container has one and on the CPU otherwise.

The weights are loaded once per consumer process, in `__init__` (a container actor's processes each
build their own instance, as Lambda's execution environments do). With PyTorch installed and CUDA
available the weights become a tensor on the GPU and each review a bag-of-words vector multiplied
there; without either, the same sum runs in plain Python. Both give the same answer; each output says
which device computed it, so a deployment can tell whether it got the GPU it paid for.

torch is imported only if present: the example, its tests and its bench run without it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import os
import re
from typing import Any

WORD = re.compile(r"[a-z]+")


def words(text: str) -> list[str]:
    """The distinct lowercase words of a text: the model's features (training splits text the same way)."""
    return sorted(set(WORD.findall(text.lower())))


def cuda_torch() -> Any | None:
    """The torch module if it is installed and sees a CUDA device; None otherwise."""
    if importlib.util.find_spec("torch") is None:
        return None
    torch = importlib.import_module("torch")
    return torch if torch.cuda.is_available() else None


class Scorer:
    def __init__(self, model_path: str | None = None, device: str | None = None) -> None:
        """The sidecar creates it with no arguments: the weights' path from `MODEL_PATH` (the mesh's
        `files`), the device from `SCORER_DEVICE` (`cpu` forces the CPU; unset, the GPU if there is one)."""
        path = model_path or os.environ["MODEL_PATH"]
        with open(path, encoding="utf-8") as source:
            model = json.load(source)
        self.classes: list[str] = model["classes"]
        self.bias: float = model["bias"]
        self.weights: dict[str, float] = model["weights"]
        self.torch = None if (device or os.environ.get("SCORER_DEVICE")) == "cpu" else cuda_torch()
        if self.torch is None:
            self.device = "cpu"
            return
        self.vocabulary = {word: index for index, word in enumerate(self.weights)}
        self.vector = self.torch.tensor(list(self.weights.values()), device="cuda")
        self.device = f"cuda ({self.torch.cuda.get_device_name(0)})"

    def _score(self, text: str) -> float:
        known = [word for word in words(text) if word in self.weights]
        if self.torch is None:
            return self.bias + sum(self.weights[word] for word in known)
        features = self.torch.zeros_like(self.vector)
        features[[self.vocabulary[word] for word in known]] = 1.0
        return self.bias + float(features @ self.vector)

    def _label(self, review: dict[str, Any]) -> dict[str, Any]:
        positive = 1 / (1 + math.exp(-self._score(review["text"])))
        label = self.classes[int(positive >= 0.5)]
        confidence = positive if positive >= 0.5 else 1 - positive
        return {**review, "sentiment": label, "confidence": round(confidence, 3)}

    def predict(self, product: dict[str, Any]) -> dict[str, Any]:
        """A product's reviews, each with its sentiment, and the device that scored them."""
        return {**product, "reviews": [self._label(review) for review in product["reviews"]], "device": self.device}
