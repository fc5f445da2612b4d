"""The tickets example's model is what its training script makes, with the libraries its actor
declares: trained again here in that actor's own environment (`asya_local.runtime`), it agrees with
the shipped `classifier.joblib` on every ticket of the data set and on new ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from asya_cdk.libraries import Target, install
from asya_cdk.loading import load_mesh
from asya_cdk.packaging import actor_build, layer_libraries

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tickets"
AGREE = """
import csv, json, sys
import joblib
from train import train

texts = [row["text"] for row in csv.DictReader(open(sys.argv[1]))] + json.loads(sys.argv[2])
shipped, fresh = joblib.load(sys.argv[3]), train()
print(json.dumps([list(shipped.predict(texts)), list(fresh.predict(texts))]))
"""
NEW_TICKETS = ["I was billed twice", "where is my parcel", "the app will not start", "reset my password please"]

pytestmark = pytest.mark.build


def test_the_shipped_model_is_what_train_py_makes() -> None:
    mesh = load_mesh(EXAMPLE / "mesh.yaml")
    target = Target.this_machine()
    build = actor_build(mesh, "classify", target, layer_libraries(target))
    assert build is not None
    libraries = install(build).path
    model = EXAMPLE / "model"
    command = [sys.executable, "-S", "-c", AGREE, str(model / "tickets.csv"), json.dumps(NEW_TICKETS)]
    command.append(str(model / "classifier.joblib"))
    environment = {"PYTHONPATH": f"{libraries}:{model}"}
    answer = subprocess.run(command, capture_output=True, text=True, env=environment, check=True, timeout=120)
    shipped, fresh = json.loads(answer.stdout)
    assert shipped == fresh
    assert shipped[-4:] == ["billing", "shipping", "technical", "account"]
