"""One report per batch of tickets, with pandas: a join of every ticket `intake` split the batch into.

Shipped as a container image (`package: image`): the way to ship libraries a `.zip` function cannot
hold (Lambda's 250 MB); pandas would fit one, and the image carries it the same way a heavier stack
would be carried.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd


def summarise(tickets: list[dict[str, Any]]) -> dict[str, Any]:
    frame = pd.DataFrame(tickets)
    teams = (
        frame.groupby("team")
        .agg(tickets=("id", "count"), mean_confidence=("confidence", "mean"), sla_hours=("sla_hours", "min"))
        .round({"mean_confidence": 3})
        .sort_index()
    )
    return {
        "tickets": len(frame),
        "by_team": json.loads(teams.to_json(orient="index")),
        "by_category": {str(k): int(v) for k, v in frame["category"].value_counts().sort_index().items()},
        "unsure": sorted(frame.loc[frame["confidence"] < 0.5, "id"].tolist()),
    }
