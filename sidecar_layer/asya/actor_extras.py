"""What only some actors' sidecars load, each part imported by the first sidecar that needs it: a join
actor's gathering and its table, an actor's state (`state:`), and the admission of an envelope from
outside the mesh. Every other actor's cold start does without them (`python -m bench.cold_start`); the
hop (`asya.hop`) asks here for what its actor has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asya.config import SidecarConfig
    from asya.envelope import Envelope
    from asya.gathering import Gathering
    from asya.reporting import StatusReporter
    from asya.state_store import ActorState


def gathering_of(config: SidecarConfig, reporter: StatusReporter) -> Gathering | None:
    """A join actor's gathering and its table (None for any other actor), imported by a join's sidecar
    only: every other actor's cold start does without them (`python -m bench.cold_start`)."""
    if config.join is None or not config.joins_table:
        return None
    from asya.gathering import Gathering
    from asya.join_table import JoinTable

    return Gathering(config, config.join, JoinTable(config.joins_table, config.task_ttl), reporter.store)


def actor_state_of(config: SidecarConfig) -> ActorState | None:
    """The actor's state (`asya.state`), for an actor with `state:` only: imported by its sidecar alone."""
    if not config.state_table:
        return None
    from asya.state_store import ActorState

    return ActorState(config.state_table, config.actor, bucket=config.state_bucket, ttl_days=config.state_ttl_days)


def admission_problem_of(envelope: Envelope) -> str | None:
    """Why an envelope from outside the mesh cannot start a task (`asya.admission`, imported by the first
    such envelope: a hop of the mesh's own never needs it)."""
    from asya.admission import admission_problem

    return admission_problem(envelope)
