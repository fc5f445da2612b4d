"""Resiliency: what happens when a handler raises (docs/actors.md, "Resiliency").

A policy says how often and how patiently to retry; rules pick a policy by exception type, matched in
order against the exception's MRO. Durations are seconds, or strings such as "500ms", "30s", "5m",
"2h" so that a mesh file reads naturally.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, NonNegativeFloat, model_validator

from asya.reasons import Reason

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
DEFAULT_POLICY = "default"


def _to_seconds(value: Any) -> Any:
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise ValueError(f"{value!r} is not a duration (use seconds, or e.g. '500ms', '30s', '5m', '2h')")
        return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return value


def _jitter_fraction(value: Any) -> Any:
    """`true` spreads delays ±50%; a number in [0, 1] chooses the spread; `false` disables it."""
    if isinstance(value, bool):
        return 0.5 if value else 0.0
    return value


# what a duration may be written as, in the mesh file's JSON Schema (`asya schema`): the validator turns
# the string into seconds, so the schema of the number alone would refuse "30s"
Duration = Annotated[str, Field(pattern=_DURATION.pattern)]
Seconds = Annotated[NonNegativeFloat, BeforeValidator(_to_seconds, json_schema_input_type=NonNegativeFloat | Duration)]


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=1, ge=1)
    backoff: Literal["constant", "linear", "exponential"] = "constant"
    initial_delay: Seconds = 1.0
    max_interval: Seconds | None = None
    max_duration: Seconds | None = None
    jitter: Annotated[
        float, BeforeValidator(_jitter_fraction, json_schema_input_type=float | bool), Field(ge=0.0, le=1.0)
    ] = 0.0
    on_exhausted: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)

    def delay_after(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based) before the next one."""
        base = {
            "constant": self.initial_delay,
            "linear": attempt * self.initial_delay,
            "exponential": self.initial_delay * 2 ** (attempt - 1),
        }[self.backoff]
        if self.jitter:
            base *= 1 + self.jitter * (2 * (rng or random).random() - 1)
        return float(min(base, self.max_interval) if self.max_interval is not None else base)


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    errors: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    policy: str | Policy

    def matches(self, error: BaseException) -> bool:
        for cls in type(error).__mro__:
            qualified = f"{cls.__module__}.{cls.__qualname__}"
            for pattern in self.errors:
                if pattern == (qualified if "." in pattern else cls.__name__):
                    return True
        return False


class Resiliency(BaseModel):
    """`ASYA_RESILIENCY`: `{"policies": {name: policy}, "rules": [{errors, policy}]}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policies: dict[str, Policy] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rules_name_known_policies(self) -> Resiliency:
        for index, rule in enumerate(self.rules):
            if isinstance(rule.policy, str) and rule.policy not in self.policies:
                known = ", ".join(sorted(self.policies)) or "none"
                raise ValueError(f"rules[{index}].policy names unknown policy {rule.policy!r} (known: {known})")
        return self

    def policy_for(self, error: BaseException) -> Policy | None:
        for rule in self.rules:
            if rule.matches(error):
                return self.policies[rule.policy] if isinstance(rule.policy, str) else rule.policy
        return self.policies.get(DEFAULT_POLICY)


@dataclass(frozen=True, slots=True)
class Retry:
    attempt: int
    delay: float


@dataclass(frozen=True, slots=True)
class GiveUp:
    """No (more) retries. `reason` is `PolicyExhausted` or `HandlerError` (no policy at all)."""

    reason: Reason
    on_exhausted: list[str]


def decide(policy: Policy | None, attempt: int, first_attempt_at: dt.datetime, now: dt.datetime) -> Retry | GiveUp:
    """Retry or give up after failed attempt `attempt`, honouring `max_attempts` and `max_duration`."""
    if policy is None:
        return GiveUp(Reason.HANDLER_ERROR, [])
    if attempt < policy.max_attempts:
        delay = policy.delay_after(attempt)
        elapsed = (now - first_attempt_at).total_seconds()
        if policy.max_duration is None or elapsed + delay <= policy.max_duration:
            return Retry(attempt + 1, delay)
    return GiveUp(Reason.POLICY_EXHAUSTED, list(policy.on_exhausted))
