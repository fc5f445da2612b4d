"""Train the ticket classifier from `tickets.csv` and write `classifier.joblib` beside it.

A TF-IDF of word unigrams and bigrams and a logistic regression: small (a few hundred kilobytes),
trained in a second, and good enough to route support tickets. The model in this folder was made by
this script with the libraries the `classify` actor declares, so the actor loads what it trains:

    python train.py            # in an environment with scikit-learn==1.9.1 and joblib==1.6.0

`tests/unit/test_tickets_model.py` trains it again in the actor's own environment and checks it
agrees with the shipped one.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import joblib
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

HERE = Path(__file__).resolve().parent


def train(data: Path = HERE / "tickets.csv") -> object:
    with data.open(newline="") as opened:
        rows = list(csv.DictReader(opened))
    model = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1),
        LogisticRegression(C=10.0, max_iter=1000),
    )
    model.fit([row["text"] for row in rows], [row["category"] for row in rows])
    return model


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "classifier.joblib"
    joblib.dump(train(), target, compress=3)
    print(f"wrote {target} ({target.stat().st_size:,} bytes)")
