"""RayActors: one Ray actor per worker, all built alike, taking chunks of work round-robin."""

from __future__ import annotations

from typing import Any

__all__ = ["RayActors"]


class RayActors:
    """A pool of Ray actors of ``actor_cls`` (each made with ``args``) with a ``chunk`` method.

    Starts Ray when it is not running: ``address="local"`` on this machine with ``workers``
    CPUs, any other address joins that cluster (``ray.init(address=...)``); a Ray it started is
    shut down by ``close``.

    Args:
        actor_cls: The class each actor runs; ``chunk(*work)`` does one piece of work.
        args: Constructor arguments of every actor.
        workers: Actors to start (default: the cluster's CPU count).
        address: "local" or a Ray cluster address.
    """

    def __init__(self, actor_cls: type, args: tuple[Any, ...], workers: int | None,
                 address: str) -> None:
        try:
            import ray
        except ImportError:
            raise ImportError("a Ray address needs Ray: pip install 'compoenv[ray]'") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            if address == "local":
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, log_to_driver=False)
        count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor: Any = ray.remote(num_cpus=1)(actor_cls)
        self.actors: list[Any] = [actor.remote(*args) for _ in range(count)]
        self.next = 0

    def submit(self, *work: Any) -> Any:
        """Hand one chunk to the next actor; returns the handle to pass to ``result``."""
        actor = self.actors[self.next % len(self.actors)]
        self.next += 1
        return actor.chunk.remote(*work)

    def result(self, handle: Any) -> Any:
        return self.ray.get(handle)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started:
            self.ray.shutdown()
