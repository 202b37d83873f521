"""The broker: hands each committed event to every subscriber, never waiting for one.

The daemon calls :meth:`Broker.publish` on the event loop after each commit, in sequence order.
Publishing encodes the event once and appends it to the bounded queue of every subscription
whose filter it passes; it never blocks and never fails because of a subscriber.

A subscription starts in *replay* mode: its connection reads the log from the store while live
events collect in the queue. If the queue fills during the replay, it is emptied and the replay
simply goes on further (the store holds those events too); once the replay has caught up, the
connection drops the queued events it already replayed and the subscription goes *live*, where
it ignores any event at or below its cursor (the replay may have read an event from the store
before the daemon got to publish it). A live
subscription whose queue overflows has *lagged*: it is removed, its queue dropped, and its
connection told (through ``on_lagged``) to send ``subscriber.lagged`` with the resume point and
disconnect. Memory per subscriber is bounded by its queue size; a slow subscriber slows no one.

A notice that is not part of the log (``store.degraded``: the log cannot be written) goes to
the live subscriptions it matches through :meth:`Broker.notify`, numbered with the last
sequence number published, which is where a subscriber that received it may resume.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from isccd.model import Event
from isccd.protocol import EventFilter, encode_event

#: Events handed to a connection's writer at once.
BATCH_EVENTS = 512


@dataclass(frozen=True, slots=True)
class SubscriptionStatistics:
    """A subscription's figures.

    Attributes:
        queued: Events waiting in its queue.
        queue_size: The queue's bound.
        cursor: Every event it matches up to this seq has been handed to its connection.
        replaying: Still replaying the log from the store.
        delivered: Events handed to its connection.
        lagged: It overflowed and was removed.
    """

    queued: int
    queue_size: int
    cursor: int
    replaying: bool
    delivered: int
    lagged: bool


@dataclass(frozen=True, slots=True)
class BrokerStatistics:
    """The broker's figures.

    Attributes:
        subscribers: Subscriptions registered now.
        last_seq: Sequence number of the last event published.
        published: Events published since the broker was made.
        lagged: Subscriptions removed for lagging since then.
        max_queued: Events waiting in the fullest subscription queue.
    """

    subscribers: int
    last_seq: int
    published: int
    lagged: int
    max_queued: int


class Subscription:
    """One subscriber's filter, bounded queue of encoded events, and position.

    Created by :meth:`Broker.subscribe`; its connection consumes it.
    """

    def __init__(
        self,
        event_filter: EventFilter,
        queue_size: int,
        on_lagged: Callable[[Subscription], None],
    ) -> None:
        self.filter = event_filter
        self.everything = (
            event_filter.types is None and event_filter.roots is None and event_filter.host is None
        )
        self.on_lagged = on_lagged
        self._queue: collections.deque[tuple[int, bytes]] = collections.deque()
        self._size = queue_size
        self._waiter: asyncio.Future[None] | None = None
        self._overflowed = False
        self.replaying = True
        self.lagged = False
        self.closed = False
        self.cursor = 0
        """Every matching event up to this seq has been handed to the connection."""
        self.delivered = 0

    def offer(self, seq: int, line: bytes, *, logged: bool = True) -> bool:
        """Queue an encoded event (called by the broker).

        Args:
            seq: The event's sequence number.
            line: The encoded event.
            logged: False for a notice that is not part of the log (it repeats the last
                sequence number, and is never one the replay has sent).

        Returns:
            False when the subscription just lagged (live and its queue full).
        """
        queue = self._queue
        if len(queue) >= self._size:
            queue.clear()
            if self.replaying:
                self._overflowed = True
                return True
            self.lagged = True
            self._wake()
            return False
        if logged and not self.replaying and seq <= self.cursor:
            # Replayed already: the store showed it before the daemon got to publish it.
            return True
        queue.append((seq, line))
        if len(queue) == 1:  # the connection waits only on an empty queue
            self._wake()
        return True

    def skip(self, seq: int) -> None:
        """An event it does not match was published: advance the cursor when nothing is pending."""
        if not self._queue and not self.replaying and seq > self.cursor:
            self.cursor = seq

    def take_overflow(self) -> bool:
        """Replay mode: whether the queue overflowed since the last call (then it was emptied)."""
        overflowed, self._overflowed = self._overflowed, False
        return overflowed

    def go_live(self, cursor: int) -> None:
        """End the replay at ``cursor``: drop queued events up to it, and queue live from now."""
        while self._queue and self._queue[0][0] <= cursor:
            self._queue.popleft()
        self.cursor = cursor
        self.replaying = False

    def handed_over(self, seq: int, count: int) -> None:
        """The connection wrote events up to ``seq`` (``count`` of them) to its transport."""
        self.cursor = max(self.cursor, seq)
        self.delivered += count

    async def next_batch(self) -> list[tuple[int, bytes]]:
        """Wait for queued events and take up to :data:`BATCH_EVENTS` of them.

        Returns:
            ``(seq, line)`` pairs in order; empty once the subscription lagged or was closed.
        """
        while not self._queue and not self.lagged and not self.closed:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self.lagged or self.closed:
            return []
        queue = self._queue
        if len(queue) <= BATCH_EVENTS:
            batch = list(queue)
            queue.clear()
            return batch
        return [queue.popleft() for _ in range(BATCH_EVENTS)]

    def close(self) -> None:
        """Stop the subscription; a pending :meth:`next_batch` returns empty."""
        self.closed = True
        self._queue.clear()
        self._wake()

    @property
    def queued(self) -> int:
        """Events waiting in the queue."""
        return len(self._queue)

    def statistics(self) -> SubscriptionStatistics:
        """The subscription's figures now."""
        return SubscriptionStatistics(
            queued=len(self._queue),
            queue_size=self._size,
            cursor=self.cursor,
            replaying=self.replaying,
            delivered=self.delivered,
            lagged=self.lagged,
        )

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class Broker:
    """Fans committed events out to subscriptions.

    Args:
        queue_size: Events each subscription buffers before it lags.
    """

    def __init__(self, *, queue_size: int = 10_000) -> None:
        if queue_size < 1:
            raise ValueError("queue_size must be positive")
        self.queue_size = queue_size
        self._subscriptions: set[Subscription] = set()
        self._last_seq = 0
        self._published = 0
        self._lagged = 0

    @property
    def last_seq(self) -> int:
        """Sequence number of the last event published (0 before the first)."""
        return self._last_seq

    def subscribe(
        self, event_filter: EventFilter, on_lagged: Callable[[Subscription], None]
    ) -> Subscription:
        """Register a subscription, in replay mode; it receives every event published from now.

        Args:
            event_filter: Which events it receives.
            on_lagged: Called soon (on the loop) with the subscription when it lags.
        """
        subscription = Subscription(event_filter, self.queue_size, on_lagged)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """Remove and close a subscription. Idempotent."""
        self._subscriptions.discard(subscription)
        subscription.close()

    def publish(self, event: Event) -> None:
        """Hand a committed event to every matching subscription. Never blocks.

        Call on the event loop, after the event's transaction committed, in sequence order.
        An event at or below the last sequence number published is dropped and logged:
        subscribers rely on increasing numbers to join the replay to the live stream.

        Raises:
            ValueError, TypeError: The event cannot be encoded (a bug in its producer).
        """
        if event.seq <= self._last_seq:
            structlog.get_logger().error(
                "event_out_of_order", seq=event.seq, last_seq=self._last_seq, type=event.type
            )
            return
        line = encode_event(event)
        self._last_seq = event.seq
        self._published += 1
        lagged = []
        for subscription in self._subscriptions:
            if not subscription.everything and not subscription.filter.matches(event):
                subscription.skip(event.seq)
            elif not subscription.offer(event.seq, line):
                lagged.append(subscription)
        self._lag(lagged)

    def _lag(self, lagged: list[Subscription]) -> None:
        if lagged:
            loop = asyncio.get_running_loop()
            for subscription in lagged:
                self._subscriptions.discard(subscription)
                self._lagged += 1
                loop.call_soon(subscription.on_lagged, subscription)

    def notify(self, event: Event) -> None:
        """Hand a notice that is not part of the log to every live subscription it matches.
        Never blocks; a subscription whose queue is full lags, as with :meth:`publish`.

        Its ``seq`` should be :attr:`last_seq`: every event published before it is queued
        before it, so a subscriber resuming from it misses nothing.
        """
        line = encode_event(event)
        lagged = [
            subscription
            for subscription in self._subscriptions
            if not subscription.replaying
            and (subscription.everything or subscription.filter.matches(event))
            and not subscription.offer(event.seq, line, logged=False)
        ]
        self._lag(lagged)

    def statistics(self) -> BrokerStatistics:
        """The broker's figures now."""
        return BrokerStatistics(
            subscribers=len(self._subscriptions),
            last_seq=self._last_seq,
            published=self._published,
            lagged=self._lagged,
            max_queued=max((s.queued for s in self._subscriptions), default=0),
        )
