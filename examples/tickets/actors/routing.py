"""Which team answers a ticket, and how soon: the routing table lives in a bucket of yours.

The table is read once per execution environment, with the function's own role, which the mesh file
grants `s3:GetObject` on that bucket's `routing/` keys and nothing else (`permissions:`). A ticket the
model is unsure of goes to the people who triage by hand.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3

UNSURE_BELOW = 0.5  # the model's confidence under which a person decides


class Router:
    def __init__(self) -> None:
        stored = boto3.client("s3").get_object(Bucket=os.environ["ROUTING_BUCKET"], Key="routing/teams.json")
        self.teams: dict[str, dict[str, Any]] = json.loads(stored["Body"].read())

    def route(self, ticket: dict[str, Any]) -> dict[str, Any]:
        unsure = ticket["confidence"] < UNSURE_BELOW
        team = self.teams["unsure" if unsure else ticket["category"]]
        return {**ticket, "team": team["team"], "sla_hours": team["sla_hours"]}
