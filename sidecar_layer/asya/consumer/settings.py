"""What a consumer process reads from its environment besides the sidecar's own settings."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from asya import variables

RELEASE_MARGIN = 2.0  # seconds before the stop timeout when what is unfinished is released: ECS kills at it


@dataclass(frozen=True)
class ConsumerSettings:
    queue_url: str
    concurrency: int = variables.CONSUMER_CONCURRENCY.default
    batch_size: int = variables.CONSUMER_BATCH_SIZE.default
    hop_time_limit: float = variables.HOP_TIME_LIMIT.default
    stop_grace: float = variables.STOP_GRACE.default

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ConsumerSettings:
        env = os.environ if env is None else env
        return cls(
            queue_url=variables.QUEUE_URL.require(env),
            concurrency=variables.CONSUMER_CONCURRENCY.read(env),
            batch_size=variables.CONSUMER_BATCH_SIZE.read(env),
            hop_time_limit=variables.HOP_TIME_LIMIT.read(env),
            stop_grace=variables.STOP_GRACE.read(env),
        )

    @property
    def release_after(self) -> float:
        """Seconds from SIGTERM to releasing what is still held and exiting."""
        return max(self.stop_grace - RELEASE_MARGIN, 0.0)
