"""The background consumer: order, back-pressure and failures."""

from __future__ import annotations

import threading

import pytest

from distill_assets.lib.threads import Drain


def test_items_are_consumed_in_order_before_close_returns() -> None:
    seen: list[int] = []
    drain: Drain[int] = Drain(seen.append, pending=2)
    for item in range(100):
        drain.put(item)
    drain.close()
    assert seen == list(range(100))


def test_a_slow_consumer_holds_the_producer_back() -> None:
    release = threading.Event()
    started = threading.Event()

    def consume(_: int) -> None:
        started.set()
        release.wait()

    drain: Drain[int] = Drain(consume, pending=1)
    drain.put(0)
    started.wait()
    drain.put(1)
    blocked = threading.Thread(target=drain.put, args=(2,))
    blocked.start()
    blocked.join(timeout=0.2)
    assert blocked.is_alive()
    release.set()
    blocked.join()
    drain.close()


def test_a_failure_is_raised_by_the_next_put_or_by_close() -> None:
    seen: list[int] = []

    def consume(item: int) -> None:
        if item == 3:
            raise ValueError("bad item 3")
        seen.append(item)

    drain: Drain[int] = Drain(consume)
    for item in range(5):
        drain.put(item)
    with pytest.raises(ValueError, match="bad item 3"):
        drain.close()
    assert seen == [0, 1, 2]
    drain = Drain(consume, pending=1)
    drain.put(3)
    with pytest.raises(ValueError, match="bad item 3"):
        for item in range(1000):
            drain.put(item)
    with pytest.raises(ValueError, match="bad item 3"):
        drain.close()
