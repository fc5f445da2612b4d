"""The ticket classifier: a scikit-learn model (`model/train.py`) loaded once per execution environment.

The mesh file ships the model as a file (`files: MODEL_PATH`): it is on disk, and its path in
`MODEL_PATH`, before this class is created, so `__init__` loads it once and every ticket after that
only pays for the prediction.
"""

from __future__ import annotations

import os
from typing import Any

import joblib


class Classifier:
    def __init__(self) -> None:
        self.model = joblib.load(os.environ["MODEL_PATH"])
        self.categories = [str(label) for label in self.model.classes_]

    def predict(self, ticket: dict[str, Any]) -> dict[str, Any]:
        probabilities = self.model.predict_proba([ticket["text"]])[0]
        best = int(probabilities.argmax())
        return {**ticket, "category": self.categories[best], "confidence": round(float(probabilities[best]), 3)}
