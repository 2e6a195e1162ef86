"""The built-in proxy filters, and :func:`make_filter`, which builds one from a name and text
options (the command line's ``--filter NAME:K=V,...`` and the ``--filters`` JSON file).

| name | filter | options |
|---|---|---|
| ``log`` | :class:`~kafka_wire.proxy.builtin.frame_log.FrameLog`: every frame decoded, as JSON lines | ``path`` (``-``: stdout) |
| ``tenant`` | :class:`~kafka_wire.proxy.builtin.tenants.TenantFilter`: names prefixed per tenant | ``prefix`` (one tenant) or ``by=client-id`` (the client id up to ``separator``, default ``.``) |
| ``policy`` | :class:`~kafka_wire.proxy.builtin.policy.ProducePolicy`: refuse batches whose records fail a predicate | ``predicate=module:function``, ``max-value-bytes``, ``require-key`` |
| ``encrypt`` | :class:`~kafka_wire.proxy.builtin.encryption.RecordEncryption`: values encrypted on produce, decrypted on fetch | ``key-file``, ``topics`` (``a;b``; default all) |
| ``faults`` | :class:`~kafka_wire.proxy.builtin.faults.FaultFilter`: error codes, latency, dropped connections | ``errors=API:CODE[;...]``, ``latency-ms``, ``latency-api``, ``close=API`` |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kafka_wire.proxy.filters import Filter

#: Where a filter writes lines: a function of a path ("-": stdout) to a line writer.
SinkFor = Callable[[str], Callable[[str], None]]


def make_filter(
    name: str, options: Mapping[str, str], sink_for: SinkFor, random_bytes: Callable[[int], bytes]
) -> Filter:
    """The built-in filter ``name`` configured by text ``options``; ValueError for a bad one.
    ``sink_for`` opens the log's output, ``random_bytes`` (``os.urandom``) makes keys and nonces."""
    if name == "log":
        from kafka_wire.proxy.builtin.frame_log import FrameLog

        return FrameLog.from_options(options, sink_for)
    if name == "tenant":
        from kafka_wire.proxy.builtin.tenants import TenantFilter

        return TenantFilter.from_options(options)
    if name == "policy":
        from kafka_wire.proxy.builtin.policy import ProducePolicy

        return ProducePolicy.from_options(options)
    if name == "encrypt":
        from kafka_wire.proxy.builtin.encryption import RecordEncryption

        return RecordEncryption.from_options(options, random_bytes)
    if name == "faults":
        from kafka_wire.proxy.builtin.faults import FaultFilter

        return FaultFilter.from_options(options)
    raise ValueError(f"no filter named {name!r} (log, tenant, policy, encrypt, faults)")
