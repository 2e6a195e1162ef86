"""``kafka-wire fuzz`` through ``kafka-wire proxy`` to ``kafka-wire serve``: generated, mutated and
unadvertised requests relayed by the proxy find nothing that the broker alone would not (the same
run against the broker directly has no finding: ``tests/netfuzz/test_live_servers.py``), and the
proxy outlives every connection the fuzzer breaks."""

from __future__ import annotations

from pathlib import Path

from tests.netfuzz.test_live_servers import run_fuzz
from tests.proxy.conftest import Upstream
from tests.proxy.harness import proxy


def test_fuzzing_through_the_proxy_finds_nothing(serve_upstream: Upstream, tmp_path: Path) -> None:
    process = proxy(
        tmp_path / "proxy", serve_upstream.bootstrap, ["log:path=" + str(tmp_path / "frames.jsonl")]
    )
    process.start()
    try:
        status, report, output = run_fuzz(
            process.bootstrap, tmp_path / "r.json", "--requests", "1000", "--seed", "11"
        )
        assert status == 0, (output, process.log()[-3000:])
        assert report is not None and report.requests >= 1000 and not report.findings
        assert report.sent["mutated"] > 50 and report.sent["unadvertised"] > 5
        assert process.running()
    finally:
        process.close()
