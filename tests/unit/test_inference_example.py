"""The inference example (`examples/inference`): its scorer labels reviews it was not trained on, on
the CPU here (no torch), and says so in every answer; given torch and a GPU (a stand-in torch module
here) it scores on CUDA with the same answers; the weights it ships are what its training script
builds; its long hop takes the time its mesh file gives it."""

from __future__ import annotations

import importlib.machinery
import json
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from examples.inference.actors import reindex
from examples.inference.actors.sentiment import Scorer, cuda_torch
from examples.inference.model.train import build

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "inference"
MODEL = EXAMPLE / "model" / "weights.json"


def test_the_scorer_labels_unseen_reviews_on_the_cpu_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODEL_PATH", str(MODEL))  # as the mesh's `files` set it
    monkeypatch.delenv("SCORER_DEVICE", raising=False)
    product = {
        "product": "toaster-1",
        "reviews": [
            {"id": "a", "text": "Lovely toaster, fast and quiet. Great value!"},
            {"id": "b", "text": "Cracked after a week, poor quality, want my money back"},
        ],
    }

    answer = Scorer().predict(product)

    assert cuda_torch() is None  # no torch in this environment: the pure-Python path
    assert answer["device"] == "cpu"
    assert answer["product"] == "toaster-1"
    labels = [(review["id"], review["sentiment"]) for review in answer["reviews"]]
    assert labels == [("a", "positive"), ("b", "negative")]
    assert all(0.5 <= review["confidence"] <= 1 for review in answer["reviews"])


class FakeTensor:
    """Just what the scorer asks of a CUDA tensor: zeros of its shape, ones set by index, a dot product."""

    def __init__(self, values: list[float], device: str) -> None:
        self.values, self.device = list(values), device

    def __setitem__(self, indices: list[int], value: float) -> None:
        for index in indices:
            self.values[index] = value

    def __matmul__(self, other: FakeTensor) -> float:
        assert self.device == other.device == "cuda", "both operands on the GPU"
        return sum(a * b for a, b in zip(self.values, other.values, strict=True))


def fake_torch(cuda: bool) -> types.ModuleType:
    torch: Any = types.ModuleType("torch")
    torch.__spec__ = importlib.machinery.ModuleSpec("torch", None)
    torch.cuda = types.SimpleNamespace(is_available=lambda: cuda, get_device_name=lambda _index: "NVIDIA A10G")
    torch.tensor = FakeTensor
    torch.zeros_like = lambda like: FakeTensor([0.0] * len(like.values), like.device)
    return torch  # type: ignore[no-any-return]


def test_with_torch_and_a_gpu_it_scores_on_cuda_as_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=True))
    monkeypatch.delenv("SCORER_DEVICE", raising=False)
    product = {
        "product": "p",
        "reviews": [{"id": "a", "text": "Great quality, love it"}, {"id": "b", "text": "Broken"}],
    }

    on_gpu = Scorer(str(MODEL)).predict(product)
    on_cpu = Scorer(str(MODEL), device="cpu").predict(product)

    assert on_gpu["device"] == "cuda (NVIDIA A10G)"
    assert on_cpu["device"] == "cpu"
    assert on_gpu["reviews"] == on_cpu["reviews"]


def test_with_torch_but_no_gpu_it_stays_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=False))
    monkeypatch.delenv("SCORER_DEVICE", raising=False)

    assert Scorer(str(MODEL)).device == "cpu"


def test_the_shipped_weights_are_what_the_training_script_builds() -> None:
    assert build() == json.loads(MODEL.read_text())


def test_the_long_hop_takes_the_configured_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REINDEX_SECONDS", "0.2")  # 300 in the mesh file
    started = time.monotonic()

    answer = reindex.rebuild({"product": "p", "reviews": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]})

    assert 0.2 <= time.monotonic() - started < 2
    assert answer["indexed"] == ["a", "b"]
    assert answer["product"] == "p"
