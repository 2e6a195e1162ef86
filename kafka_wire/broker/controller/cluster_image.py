"""The registered brokers as the metadata log builds them (Kafka's ``ClusterImage``).

:class:`ClusterImage` applies the broker records (RegisterBrokerRecord, UnregisterBrokerRecord,
FenceBrokerRecord, UnfenceBrokerRecord, BrokerRegistrationChangeRecord): per broker its epoch,
incarnation id, endpoints, rack, supported features, log directories, and whether it is fenced
or in controlled shutdown. A record naming another epoch than the registered one changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import BrokerInfo, Endpoint
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.codec.structs import Message
from kafka_wire.quick_dataclass import dataclass

#: ``BrokerRegistrationChangeRecord.Fenced`` values (Kafka's ``BrokerRegistrationFencingChange``:
#: 1 fence, -1 unfence, 0 no change); its ``InControlledShutdown`` is 1 to enter, 0 no change.
FENCE: Final = 1
UNFENCE: Final = -1

#: The records this section applies, by class name (a class loads with its first record).
CLUSTER_RECORDS: Final = (
    "RegisterBrokerRecord",
    "UnregisterBrokerRecord",
    "FenceBrokerRecord",
    "UnfenceBrokerRecord",
    "BrokerRegistrationChangeRecord",
)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A broker as registered: what :class:`BrokerInfo` shows, with what only the controller needs."""

    info: BrokerInfo
    incarnation_id: uuid.UUID
    #: Supported feature ranges: name -> (min, max).
    features: tuple[tuple[str, int, int], ...] = ()
    #: Security protocol per listener name (``SecurityProtocol.id``; 0 = PLAINTEXT).
    security_protocols: tuple[tuple[str, int], ...] = ()
    log_dirs: tuple[uuid.UUID, ...] = ()


class ClusterImage:
    """Broker registrations by node id."""

    def __init__(self) -> None:
        self._brokers: dict[int, BrokerRegistration] = {}

    def brokers(self) -> Sequence[BrokerInfo]:
        return [self._brokers[b].info for b in sorted(self._brokers)]

    def broker(self, node_id: int) -> BrokerInfo | None:
        registration = self._brokers.get(node_id)
        return None if registration is None else registration.info

    def registration(self, node_id: int) -> BrokerRegistration | None:
        return self._brokers.get(node_id)

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        # The records a start writes first: the other classes load with their first record.
        if isinstance(record, messages.RegisterBrokerRecord):
            self._brokers[record.broker_id] = BrokerRegistration(
                info=BrokerInfo(
                    node_id=record.broker_id,
                    epoch=record.broker_epoch,
                    endpoints=tuple(Endpoint(e.name, e.host, e.port) for e in record.end_points),
                    rack=record.rack,
                    fenced=record.fenced,
                    in_controlled_shutdown=record.in_controlled_shutdown,
                ),
                incarnation_id=record.incarnation_id,
                features=tuple(
                    (f.name, f.min_supported_version, f.max_supported_version) for f in record.features
                ),
                security_protocols=tuple((e.name, e.security_protocol) for e in record.end_points),
                log_dirs=tuple(record.log_dirs),
            )
            delta.brokers[record.broker_id] = None
        elif isinstance(record, messages.BrokerRegistrationChangeRecord):
            change = {FENCE: True, UNFENCE: False}.get(record.fenced)
            shutdown = True if record.in_controlled_shutdown == 1 else None
            self._change(record.broker_id, record.broker_epoch, delta, fenced=change, shutdown=shutdown)
        elif isinstance(record, messages.UnregisterBrokerRecord):
            current = self._brokers.get(record.broker_id)
            if current is not None and current.info.epoch == record.broker_epoch:
                del self._brokers[record.broker_id]
                delta.brokers[record.broker_id] = None
        elif isinstance(record, (messages.FenceBrokerRecord, messages.UnfenceBrokerRecord)):
            self._change(
                record.id, record.epoch, delta, fenced=isinstance(record, messages.FenceBrokerRecord)
            )

    def _change(
        self,
        broker_id: int,
        epoch: int,
        delta: DeltaBuilder,
        *,
        fenced: bool | None = None,
        shutdown: bool | None = None,
    ) -> None:
        current = self._brokers.get(broker_id)
        if current is None or current.info.epoch != epoch:
            return
        info = current.info
        if fenced is not None:
            # A broker that is fenced again leaves controlled shutdown (Kafka: fencing clears it).
            info = replace(
                info, fenced=fenced, in_controlled_shutdown=info.in_controlled_shutdown and not fenced
            )
        if shutdown is not None:
            info = replace(info, in_controlled_shutdown=shutdown)
        self._brokers[broker_id] = replace(current, info=info)
        delta.brokers[broker_id] = None

    def snapshot_records(self) -> list[Message]:
        out: list[Message] = []
        for broker_id in sorted(self._brokers):
            reg = self._brokers[broker_id]
            protocols = dict(reg.security_protocols)
            out.append(
                messages.RegisterBrokerRecord(
                    broker_id=broker_id,
                    incarnation_id=reg.incarnation_id,
                    broker_epoch=reg.info.epoch,
                    end_points=[
                        messages.RegisterBrokerRecordBrokerEndpoint(
                            name=e.listener,
                            host=e.host,
                            port=e.port,
                            security_protocol=protocols.get(e.listener, 0),
                        )
                        for e in reg.info.endpoints
                    ],
                    features=[
                        messages.RegisterBrokerRecordBrokerFeature(
                            name=n, min_supported_version=lo, max_supported_version=hi
                        )
                        for n, lo, hi in reg.features
                    ],
                    rack=reg.info.rack,
                    fenced=reg.info.fenced,
                    in_controlled_shutdown=reg.info.in_controlled_shutdown,
                    log_dirs=list(reg.log_dirs),
                )
            )
        return out
