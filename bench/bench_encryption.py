"""The record encryption filter's CPU per record, against AES-GCM's own, in one process.

``RecordEncryption.encrypt`` and ``decrypt`` (``kafka_wire.proxy.builtin.encryption``) over a
records payload of ``--batches`` uncompressed v2 batches of ``--records`` records with
``--value-bytes``-byte values, then ``AESGCM.encrypt`` / ``decrypt`` alone on one such value:
CPU time per record (``time.process_time``, so other processes' load counts less than in wall
time), best of ``--repeat`` runs. The difference is the filter's own code (reading the batch,
headers, rebuilding it). ``--checkout DIR`` imports ``kafka_wire`` from another checkout
(e.g. the main branch) to compare. Figures: ``docs/benchmarks/proxy.md``.

    .venv/bin/python bench/bench_encryption.py [--batches 5] [--records 2000] [--value-bytes 100]
        [--repeat 5] [--checkout DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path


def best_us(run: Callable[[], object], repeat: int, per: int) -> float:
    """The fastest of ``repeat`` runs, in CPU microseconds per item (``per`` items a run)."""
    best = float("inf")
    for _ in range(repeat):
        begin = time.process_time()
        run()
        best = min(best, time.process_time() - begin)
    return best / per * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description="the record encryption filter's CPU per record")
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--checkout", help="import kafka_wire from this checkout")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.checkout or Path(__file__).resolve().parents[1]).resolve()))

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from kafka_wire.proxy.builtin.encryption import KeyFile, RecordEncryption
    from kafka_wire.records import build_batch

    value = b"v" * args.value_bytes
    count = args.batches * args.records
    payload = b"".join(
        build_batch([(None, value)] * args.records, base_offset=i * args.records) for i in range(args.batches)
    )
    sealer = RecordEncryption(KeyFile({"bench": os.urandom(32)}, os.urandom), os.urandom)
    sealed = sealer.encrypt(payload)
    if sealer.decrypt(sealed) != payload:
        raise RuntimeError("decrypt(encrypt(x)) != x")
    encrypt = best_us(lambda: sealer.encrypt(payload), args.repeat, count)
    decrypt = best_us(lambda: sealer.decrypt(sealed), args.repeat, count)
    aead, nonce = AESGCM(os.urandom(32)), os.urandom(12)
    cipher_text = aead.encrypt(nonce, value, None)
    seal = best_us(lambda: [aead.encrypt(nonce, value, None) for _ in range(count)], args.repeat, count)
    open_ = best_us(
        lambda: [aead.decrypt(nonce, cipher_text, None) for _ in range(count)], args.repeat, count
    )
    print(
        f"{args.batches} batches x {args.records:,} records of {args.value_bytes} bytes, "
        f"kafka_wire from {sys.path[0]}; CPU us per record, best of {args.repeat}, "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| step | filter | AES-GCM alone | filter / AES-GCM |")
    print("|---|---:|---:|---:|")
    print(f"| encrypt (produce) | {encrypt:.2f} | {seal:.2f} | {encrypt / seal:.1f}x |")
    print(f"| decrypt (fetch) | {decrypt:.2f} | {open_:.2f} | {decrypt / open_:.1f}x |")


if __name__ == "__main__":
    main()
