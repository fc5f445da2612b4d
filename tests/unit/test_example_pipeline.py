"""The review-triage example, end to end in one process: every envelope accounted for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asya_local.testing.inprocess import InProcessMesh

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reviews"
HANDLERS = {
    "split": "examples.reviews.actors.split",
    "score": "examples.reviews.actors.SentimentModel.score",
    "triage": "examples.reviews.actors.triage",
    "escalate": "examples.reviews.actors.escalate",
}
ROUTE = ["split", "score", "triage"]


def test_review_triage_runs_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    catalogue = json.loads((EXAMPLE / "inputs.json").read_text())
    with InProcessMesh("example", HANDLERS) as mesh:
        ids = [mesh.send(ROUTE, item) for item in catalogue]
        mesh.run_until_idle()
        results = mesh.drain("x-sink")
        failures = mesh.drain("x-sump")

    assert failures == []
    assert all(e["status"]["phase"] == "succeeded" for e in results)
    reviews = {(e["payload"]["product"], e["payload"].get("review")): e for e in results}
    assert set(reviews) == {
        ("kettle-9", 1),
        ("kettle-9", 2),
        ("kettle-9", 3),
        ("lamp-2", 1),
        ("lamp-2", 2),
        ("mug-5", None),
        ("chair-7", 1),
        ("chair-7", 2),
    }
    angry = reviews[("kettle-9", 2)]
    assert angry["payload"]["action"] == "escalate"
    assert angry["payload"]["ticket"] == "SUP-kettle-9-2"
    assert angry["route"]["prev"] == ["split", "score", "triage", "escalate"]
    assert angry["headers"]["priority"] == "high"
    assert angry["headers"]["product"] == "kettle-9"
    calm = reviews[("lamp-2", 1)]
    assert calm["route"]["prev"] == ["split", "score", "triage"]
    assert calm["payload"]["sentiment"] == "positive"
    assert "priority" not in calm["headers"]

    kettle_id = ids[0]
    kettle = [e for e in results if e["payload"]["product"] == "kettle-9"]
    assert sum(e["id"] == kettle_id for e in kettle) == 1, "the first fan-out output keeps the id"
    assert all(e.get("parent_id") == kettle_id for e in kettle if e["id"] != kettle_id)
    empty = reviews[("mug-5", None)]
    assert empty["id"] == ids[2]
    assert empty["route"] == {"prev": [], "curr": "split", "next": ["score", "triage"]}, "no reviews: unshifted"

    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    sent_by_actor = {m["actor"]: m["MessagesSent"] for m in metrics if m.get("destination") == "actor"}
    assert sent_by_actor == {"split": [7.0], "score": [7.0], "triage": [3.0]}, "each actor's metrics carry its name"
