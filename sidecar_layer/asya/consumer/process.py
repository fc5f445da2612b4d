"""A consumer process's life: build the sidecar, serve, and stop on SIGTERM within the grace period.

SIGTERM (ECS stopping the task, a scale-in) stops receiving at once; the batch in hand may finish
until the stop timeout less a margin (`ConsumerSettings.release_after`). Then whatever is still held
is released (visibility 0) and the process exits 0 without waiting for the hop: ECS would kill it a
moment later anyway. A hop cut short runs again elsewhere once its claim lapses, and the claim makes
sure nothing it sent is sent twice (docs/containers.md, "A hop cut short").
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, MutableSequence
from typing import Any

import boto3

from asya.config import SidecarConfig
from asya.consumer.loop import Consumer, Stopped
from asya.consumer.orphans import when_orphaned
from asya.consumer.protection import flag
from asya.consumer.settings import ConsumerSettings
from asya.sidecar import Sidecar

LOG = logging.getLogger("asya.consumer")


def serve_until_stopped(consumer: Consumer) -> None:
    """Serve in this (the main) thread, so the sidecar's timer can stop a handler at its limit
    (`asya.timeouts`), until SIGTERM or SIGINT and the drain that follows."""

    def on_stop(signum: int, _frame: Any) -> None:
        if consumer.stopping.is_set():
            return
        consumer.stopping.set()
        grace = consumer.settings.release_after
        LOG.info("stopping (signal %d): no more receives; %.0f s for the hop in hand", signum, grace)
        timer = threading.Timer(grace, _give_up, (consumer,))
        timer.daemon = True
        timer.start()
        if consumer.receiving:
            raise Stopped

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    consumer.serve()


def _give_up(consumer: Consumer) -> None:
    released = consumer.holding.release_all()
    LOG.warning("grace period over: %d unfinished messages released to their queue", released)
    logging.shutdown()
    os._exit(0)


def run_process(on_busy: Callable[[bool], None]) -> None:
    """One consumer process, built from its environment: the sidecar's variables and the consumer's;
    `on_busy` is told when it starts holding a batch and when it settled it (`consumer.protection`)."""
    settings = ConsumerSettings.from_env()
    sidecar = Sidecar(SidecarConfig.from_env())
    queue_name = settings.queue_url.rstrip("/").rsplit("/", 1)[-1]
    serve_until_stopped(Consumer(sidecar.handle, boto3.client("sqs"), settings, queue_name, on_busy))


def run_child(parent: int, busy: MutableSequence[float], index: int) -> None:
    """One consumer process of several (`asya.consumer.__main__`; here, not there, so that a spawned
    child can import it): it stops as on SIGTERM if `parent` dies without stopping it, and marks its
    slot `index` of the task's shared `busy` while it holds messages."""
    when_orphaned(parent, lambda: os.kill(os.getpid(), signal.SIGTERM))
    run_process(flag(busy, index))
