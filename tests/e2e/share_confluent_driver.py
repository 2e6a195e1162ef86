"""One KIP-932 share consumer of confluent-kafka (librdkafka's ``ShareConsumer``) as a test peer:
the same command line, acknowledgement rules and JSON-lines events as
``tests/e2e/java/ShareDriver.java`` (see there and ``tests/e2e/test_share_groups.py``)::

    python share_confluent_driver.py BOOTSTRAP GROUP TOPIC NAME [--work-ms-per-record MS]
        [--hold] [--timeout-s S]

It polls until its standard input closes (or the timeout), then closes the consumer. The group
config (``--earliest``) is the Java driver's job: confluent-kafka's admin client is not needed for it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

from confluent_kafka import AcknowledgeType, ShareConsumer


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def now() -> int:
    return int(time.time() * 1000)


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "group", "topic", "member"):
        parser.add_argument(name)
    parser.add_argument("--work-ms-per-record", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=120.0)
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args()
    stop = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.read()  # the test closes our stdin to stop us
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    deadline = time.monotonic() + args.timeout_s
    consumer = ShareConsumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "client.id": f"share-{args.member}",
            "share.acknowledgement.mode": "explicit",
        }
    )
    member = args.member
    try:
        consumer.subscribe([args.topic])
        while not stop.is_set() and time.monotonic() < deadline:
            messages = consumer.poll(0.2)
            good = [m for m in messages if m.error() is None]
            for m in messages:
                if m.error() is not None:
                    emit(event="client_error", member=member, message=str(m.error()), t=now())
            if not good:
                continue
            if args.work_ms_per_record:
                time.sleep(args.work_ms_per_record * len(good) / 1000)  # the records' processing
            for m in good:
                value = (m.value() or b"").decode()
                count = m.delivery_count()
                emit(
                    event="delivered",
                    member=member,
                    partition=m.partition(),
                    offset=m.offset(),
                    value=value,
                    count=-1 if count is None else count,
                    t=now(),
                )
                if args.hold:
                    continue
                if value == "poison":
                    kind = AcknowledgeType.RELEASE
                elif value.startswith("reject-"):
                    kind = AcknowledgeType.REJECT
                elif value.startswith("release-") and count == 1:
                    kind = AcknowledgeType.RELEASE
                else:
                    kind = AcknowledgeType.ACCEPT
                emit(
                    event="acknowledging",
                    member=member,
                    partition=m.partition(),
                    offset=m.offset(),
                    type=kind.name,
                    t=now(),
                )
                consumer.acknowledge(m, kind)
            if args.hold:  # a member that stopped working: no acknowledgement, no poll, no close
                stop.wait()
                os._exit(0)
            results = consumer.commit_sync(30.0)
            errors = sum(1 for error in results.values() if error is not None)
            emit(event="committed", member=member, errors=errors, t=now())
    except Exception as exc:  # reported as an event: the test shows it
        emit(event="error", member=member, message=repr(exc))
        return 1
    finally:
        consumer.close()
    emit(event="closed", member=member, t=now())
    return 0


if __name__ == "__main__":
    sys.exit(main())
