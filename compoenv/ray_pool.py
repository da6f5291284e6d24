"""RayActors: one Ray actor per worker, all alike, taking chunks of work; a dead one is replaced."""

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
        self._remote: Any = ray.remote(num_cpus=1)(actor_cls)
        self._args = args
        self.actors: list[Any] = [self._remote.remote(*args) for _ in range(count)]
        self.next = 0

    def submit(self, *work: Any, actor: int | None = None) -> Any:
        """Hand one chunk to actor number ``actor`` (default: the next one, round-robin);
        returns the handle to pass to ``result``. One actor runs its chunks in order."""
        if actor is None:
            actor = self.next % len(self.actors)
            self.next += 1
        return self.actors[actor].chunk.remote(*work)

    def replace(self, actor: int) -> None:
        """Start a fresh actor in the place of actor number ``actor``, killing the old one if it
        still runs: after its process died (its handles raise ``ray.exceptions.RayActorError``)
        the pool works on at full width."""
        self.ray.kill(self.actors[actor])
        self.actors[actor] = self._remote.remote(*self._args)

    def result(self, handle: Any) -> Any:
        return self.ray.get(handle)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started:
            self.ray.shutdown()
