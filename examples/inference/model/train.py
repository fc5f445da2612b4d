"""Trains the example's sentiment model and writes `weights.json`: a logistic regression over the words
of a review, fitted by plain gradient descent on `reviews.csv`, so that building it needs nothing
beyond Python. The weights are shipped with the example (no download when an actor starts); run
this again after changing the reviews:

    python -m examples.inference.model.train      (from the repository's root)
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from examples.inference.actors.sentiment import words  # the scorer's tokenizer: training and serving split alike

HERE = Path(__file__).resolve().parent
CLASSES = ["negative", "positive"]
EPOCHS, RATE, DECAY = 300, 0.5, 0.001  # enough to separate 24 reviews; the decay keeps weights small


def train(rows: list[tuple[str, str]]) -> dict[str, object]:
    """One weight per word and a bias: a review's score is their sum, its probability of being
    positive the score's sigmoid."""
    weights: dict[str, float] = {word: 0.0 for _, text in rows for word in words(text)}
    bias = 0.0
    for _ in range(EPOCHS):
        for label, text in rows:
            seen = words(text)
            score = bias + sum(weights[word] for word in seen)
            error = 1 / (1 + math.exp(-score)) - CLASSES.index(label)
            bias -= RATE * error
            for word in seen:
                weights[word] -= RATE * (error + DECAY * weights[word])
    rounded = {word: round(weight, 4) for word, weight in sorted(weights.items()) if abs(weight) >= 1e-4}
    return {"classes": CLASSES, "bias": round(bias, 4), "weights": rounded}


def build() -> dict[str, object]:
    """The model of the reviews beside this script."""
    with (HERE / "reviews.csv").open(newline="") as source:
        return train([(row["label"], row["text"]) for row in csv.DictReader(source)])


def main() -> None:
    (HERE / "weights.json").write_text(json.dumps(build(), indent=1) + "\n")


if __name__ == "__main__":
    main()
