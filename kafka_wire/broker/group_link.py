"""The broker's side of its group coordinator: group requests in, answers out.

:class:`GroupLink` builds the coordinator from the broker's configuration (its timers in the
engine's queue), loads ``__consumer_offsets`` at start, hands it the group requests with a token
per request, appends each of its ``Persist`` effects to ``__consumer_offsets`` (emitting to the
call's :class:`~kafka_wire.broker.effects.EffectSink`) and reports the outcome, and turns its
``Respond`` effects back into answers to the requests still waiting for them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kafka_wire.broker import offsets_topic
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.group import GroupConfig, GroupCoordinator, GroupEffect, Persist
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.state import BrokerState
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.codec.structs import Message
from kafka_wire.protocol.events import Request

#: A group answer: (connection id, the request it answers, the response body).
GroupAnswer = tuple[int, Request, Message]


class GroupLink:
    """The group coordinator as the broker drives it (see the module docstring)."""

    def __init__(
        self,
        config: BrokerConfig,
        state: BrokerState,
        effects: EffectSink,
        timers: TimerQueue,
        log: logging.Logger,
        member_id_factory: Callable[[str], str] | None = None,
    ) -> None:
        self._state = state
        self._effects = effects
        self._log = log
        #: Requests awaiting the coordinator's answer, by (connection id, correlation id).
        self._waiting: dict[tuple[int, int], Request] = {}
        offsets = state.topic_named(OFFSETS_TOPIC)
        self.coordinator = GroupCoordinator(
            GroupConfig(
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
                max_group_size=config.group_max_size,
                offsets_retention_ms=config.offsets_retention_ms,
                # Groups are placed by the partitions the topic has, once it exists.
                offsets_topic_num_partitions=(
                    offsets.partitions if offsets is not None else config.offsets_topic_num_partitions
                ),
            ),
            member_id_factory=member_id_factory,
            topic_name_of=lambda topic_id: (
                t.name if (t := state.topic_with_id(topic_id)) is not None else None
            ),
            topic_id_of=lambda name: t.topic_id if (t := state.topic_named(name)) is not None else None,
            timers=timers,
        )
        offsets_topic.replay(state, self.coordinator, log)

    @property
    def waiting(self) -> int:
        """Group requests not answered yet."""
        return len(self._waiting)

    def handle(self, conn_id: int, request: Request, client_host: str, now_ms: int) -> list[GroupAnswer]:
        token = (conn_id, request.correlation_id)
        self._waiting[token] = request
        effects = self.coordinator.handle(
            token,
            request.body,
            request.api_version,
            now_ms,
            client_id=request.header.client_id or "",
            client_host=client_host,
        )
        return self._apply(effects, now_ms)

    def tick(self, now_ms: int) -> list[GroupAnswer]:
        return self._apply(self.coordinator.tick(now_ms), now_ms)

    def topics_deleted(self, topics: Iterable[str], now_ms: int) -> list[GroupAnswer]:
        return self._apply(self.coordinator.topics_deleted(topics, now_ms), now_ms)

    def next_deadline_ms(self) -> int | None:
        return self.coordinator.next_deadline_ms()

    def forget(self, conn_id: int) -> None:
        """A connection is gone: the coordinator's later answers to it are dropped."""
        if self._waiting:
            self._waiting = {token: r for token, r in self._waiting.items() if token[0] != conn_id}

    def clear(self) -> None:
        self._waiting.clear()

    def _apply(self, effects: list[GroupEffect], now_ms: int) -> list[GroupAnswer]:
        answers: list[GroupAnswer] = []
        pending = list(effects)
        while pending:
            effect = pending.pop(0)
            if isinstance(effect, Persist):
                error = offsets_topic.append(self._state, self._effects, effect, now_ms, self._log)
                pending[:0] = self.coordinator.persisted(effect.append_id, error, now_ms)
                continue
            token = effect.token
            assert isinstance(token, tuple)
            request = self._waiting.pop(token, None)
            if self._log.isEnabledFor(logging.DEBUG):
                self._log.debug("conn %d: group answer %r", token[0], effect.body)
            if request is not None:
                answers.append((token[0], request, effect.body))
        return answers
