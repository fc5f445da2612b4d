"""The inference example (`examples/inference`): its scorer labels reviews it was not trained on, on
the CPU here (no torch), and says so in every answer; the weights it ships are what its training
script builds; its long hop takes the time its mesh file gives it."""

from __future__ import annotations

import json
import time
from pathlib import Path

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


def test_the_shipped_weights_are_what_the_training_script_builds() -> None:
    assert build() == json.loads(MODEL.read_text())


def test_the_long_hop_takes_the_configured_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REINDEX_SECONDS", "0.2")  # 300 in the mesh file
    started = time.monotonic()

    answer = reindex.rebuild({"product": "p", "reviews": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]})

    assert 0.2 <= time.monotonic() - started < 2
    assert answer["indexed"] == ["a", "b"]
    assert answer["product"] == "p"
