"""The mesh's queues as the local stack reads them: how deep each is, and which still holds work."""

from __future__ import annotations

from typing import Any

from asya.names import resource_name


def _queue_urls(sqs: Any, namespace: str) -> list[str]:
    return list(sqs.list_queues(QueueNamePrefix=resource_name(namespace, "")).get("QueueUrls", []))


def _queue_depth(sqs: Any, url: str) -> tuple[int, int, int]:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        int(attributes["ApproximateNumberOfMessagesDelayed"]),
    )


def queue_depths(sqs: Any, namespace: str) -> dict[str, tuple[int, int, int]]:
    """Visible, in flight and delayed messages for every queue of the namespace."""
    return {url.rsplit("/", 1)[-1]: _queue_depth(sqs, url) for url in _queue_urls(sqs, namespace)}


def busy_queue(sqs: Any, namespace: str, first: str | None = None) -> str | None:
    """The URL of a queue of the namespace that holds a message (visible, in flight or delayed), or
    None. It asks `first` first (the queue found busy last time) and stops at the first busy one: a
    wait for idle asks one queue per look while the mesh is busy, not every queue, and so loads the
    endpoint it waits on (and a bench measures) less."""
    urls = _queue_urls(sqs, namespace)
    if first in urls:
        urls.remove(first)
        urls.insert(0, first)
    return next((url for url in urls if sum(_queue_depth(sqs, url))), None)
