"""What the local gateway reads of the deployed API's stage and routes before the function runs.

- The stage throttle: a token bucket of `burst` tokens refilled at `rate` a second, one token a request;
  a request that finds none gets API Gateway's 429. Read from the REST stage's method settings or the
  HTTP API stage's default route settings; a route throttled apart has a bucket of its own.
- Whether `GET /.well-known/...` is open: without the route (`gateway.a2a.public_card: off` under `iam`
  or `api_key`) API Gateway refuses an unsigned, keyless read before the function runs.

Both come from the synthesized template, so the local stack refuses what the deployed API would."""

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
                if setting.get("ResourcePath", "/*") == "/*" and _limits(setting):
                    return _limits(setting)
    return None


def template_route_throttles(templates: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The routes a stage throttles apart from the others, by `<METHOD> <path>` (the registration of
    MCP hosts' clients, `asya_gateway.oauth`): a REST stage's method settings of one resource path, an
    HTTP API stage's route settings. Such a route takes its own bucket's tokens, not the stage's."""
    routes: dict[str, dict[str, float]] = {}
    for template in templates:
        for resource in template.get("Resources", {}).values():
            properties = resource.get("Properties", {})
            if resource.get("Type") == "AWS::ApiGateway::Stage":
                for setting in properties.get("MethodSettings", []):
                    path = str(setting.get("ResourcePath", "/*")).replace("~1", "/")
                    if path != "/*" and (limits := _limits(setting)):
                        routes[f"{setting['HttpMethod']} {path.removeprefix('/')}"] = limits
            if resource.get("Type") == "AWS::ApiGatewayV2::Stage":
                for key, setting in (properties.get("RouteSettings") or {}).items():
                    if limits := _limits(setting):
                        routes[str(key)] = limits
    return routes


def _limits(setting: dict[str, Any]) -> dict[str, float] | None:
    if "ThrottlingRateLimit" not in setting or "ThrottlingBurstLimit" not in setting:
        return None
    return {"rate": float(setting["ThrottlingRateLimit"]), "burst": float(setting["ThrottlingBurstLimit"])}


def template_opens_well_known(templates: Iterable[dict[str, Any]]) -> bool:
    """Whether the API has its open `GET /.well-known/{proxy+}`: the REST API's `.well-known` resource,
    or the HTTP API's route of that key."""
    for template in templates:
        for resource in template.get("Resources", {}).values():
            properties = resource.get("Properties", {})
            kind = resource.get("Type")
            if kind == "AWS::ApiGateway::Resource" and properties.get("PathPart") == ".well-known":
                return True
            if kind == "AWS::ApiGatewayV2::Route" and str(properties.get("RouteKey", "")).startswith(
                "GET /.well-known/"
            ):
                return True
    return False
