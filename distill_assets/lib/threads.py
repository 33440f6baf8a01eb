"""Background consumers: overlap Python-driven producers with GIL-releasing work (Arrow, I/O)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Drain(Generic[T]):
    """Apply `consume` to every item put, in order, in one background thread.

    At most `pending` items wait, so a fast producer is held back rather than buffering without
    bound. A failure in `consume` stops the consumption and is raised by the next `put` or by
    `close`.
    """

    def __init__(self, consume: Callable[[T], None], pending: int = 16) -> None:
        """Start the thread."""
        self._consume = consume
        self._items: queue.Queue[T | None] = queue.Queue(maxsize=pending)
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def put(self, item: T) -> None:
        """Hand `item` to the thread (raises what the thread failed with, if it did)."""
        if self._failure is not None:
            raise self._failure
        self._items.put(item)

    def close(self) -> None:
        """Wait until every item put is consumed; raise what the thread failed with, if it did."""
        self._items.put(None)
        self._thread.join()
        if self._failure is not None:
            raise self._failure

    def _run(self) -> None:
        while (item := self._items.get()) is not None:
            if self._failure is None:
                try:
                    self._consume(item)
                except BaseException as exc:  # re-raised by put() or close()
                    self._failure = exc


def prefetched(items: Iterator[T], pending: int = 1) -> Iterator[T]:
    """Yield the items of `items`, producing the next ones in a background thread meanwhile.

    At most `pending` items wait. A failure while producing is raised in the consuming thread.
    """
    ready: queue.Queue[tuple[bool, T | BaseException | None]] = queue.Queue(maxsize=pending)

    def produce() -> None:
        try:
            for item in items:
                ready.put((True, item))
            ready.put((False, None))
        except BaseException as exc:  # re-raised in the consuming thread
            ready.put((False, exc))

    threading.Thread(target=produce, daemon=True).start()
    while True:
        more, item = ready.get()
        if not more:
            if isinstance(item, BaseException):
                raise item
            return
        yield item  # type: ignore[misc]
