"""API Gateway's stage throttle, as the local gateway applies it: a token bucket of `burst` tokens
refilled at `rate` a second, one token a request; a request that finds none gets API Gateway's 429
before the function runs. Read from the synthesized template (the REST stage's method settings, or
the HTTP API stage's default route settings), so the local stack refuses what the deployed stage
would."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

_STAGES = {"AWS::ApiGateway::Stage": "MethodSettings", "AWS::ApiGatewayV2::Stage": "DefaultRouteSettings"}


@dataclass
class StageThrottle:
    rate: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    _tokens: float = field(init=False)
    _at: float = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self._tokens, self._at = float(self.burst), self.clock()

    def take(self) -> bool:
        """One request's token, if there is one."""
        with self._lock:
            now = self.clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens < 1:
                return False
            self._tokens -= 1
            return True


def template_throttle(templates: Iterable[dict[str, Any]]) -> dict[str, float] | None:
    """`{"rate", "burst"}` of the first API stage of the templates that sets a throttle, or None."""
    for template in templates:
        for resource in template.get("Resources", {}).values():
            settings = resource.get("Properties", {}).get(_STAGES.get(resource.get("Type", ""), ""))
            for setting in settings if isinstance(settings, list) else [settings] if settings else []:
                if "ThrottlingRateLimit" in setting and "ThrottlingBurstLimit" in setting:
                    return {
                        "rate": float(setting["ThrottlingRateLimit"]),
                        "burst": float(setting["ThrottlingBurstLimit"]),
                    }
    return None
