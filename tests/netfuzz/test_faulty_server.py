"""Each kind of finding, against a tiny server with that fault: detected, shrunk, reported,
replayed; and the exit statuses 0, 1 and 2."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from kafka_wire.adapters.netfuzz_socket import Session, Target, shrink_finding
from kafka_wire.cli import main
from kafka_wire.messages import ApiKey, MetadataRequest, ProduceRequest, RequestHeader
from kafka_wire.netfuzz.classify import FindingKind, api_name
from kafka_wire.netfuzz.plan import RequestKind, frame_api
from kafka_wire.netfuzz.report import Finding, loads
from kafka_wire.netfuzz.shrink import Scenario
from kafka_wire.protocol.framing import encode_request
from tests.netfuzz.faulty_server import ADVERTISED, FAULTS, Fault, FaultyServer

EXPECTED: dict[Fault, str] = {
    "close": "crash",
    "hang": "hang",
    "wrong-cid": "wrong-correlation-id",
    "malformed": "malformed-response",
    "acks0": "protocol-violation",
    "reorder": "protocol-violation",
    "die": "crash",
}


def fuzz(address: str, report: Path, requests: int = 150, trials: int = 25) -> int:
    return main(
        [
            "fuzz",
            address,
            "--requests",
            str(requests),
            "--timeout",
            "0.2",
            "--shrink-trials",
            str(trials),
            "--report",
            str(report),
        ]
    )


def test_a_well_behaved_server_gives_exit_status_0(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    with FaultyServer("none") as server:
        assert fuzz(server.address, report) == 0
    data = loads(report.read_text())
    assert data.findings == [] and data.requests >= 150
    assert data.sent.keys() == {"generated", "mutated", "unadvertised"}


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_is_found_shrunk_reported_and_replayed(
    fault: Fault, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    with FaultyServer(fault) as server:
        # every Metadata hangs for the whole timeout: fewer requests and trials
        assert fuzz(server.address, report, *((20, 6) if fault == "hang" else ())) == 1
        address = server.address
        out = capsys.readouterr().out
        data = loads(report.read_text())
        kinds = {f.kind.value for f in data.findings}
        assert EXPECTED[fault] in kinds, out
        finding = next(f for f in data.findings if f.kind.value == EXPECTED[fault])
        assert f"{EXPECTED[fault]} on" in out
        raw = json.loads(report.read_text())["findings"][0]
        assert bytes.fromhex(raw["original"]["burst"][0])  # exact bytes, as hex
        if fault == "die":
            assert finding.server_gone and data.stopped
            return
        assert finding.shrunk is not None, out
        assert finding.shrunk.prefix == () and finding.shrunk.size <= finding.original.size
        # one finding per kind and API; the detail of a shrunk one names the API its reproducer
        # blames (a protocol violation names the two requests answered out of order)
        assert len({f.signature for f in data.findings}) == len(data.findings)
        one_request = [
            f for f in data.findings if f.shrunk is not None and f.kind.value != "protocol-violation"
        ]
        assert all(api_name(f.api_key) in f.detail for f in one_request), out
        if fault != "reorder":  # the culprit alone reproduces
            assert len(finding.shrunk.burst) == 1 or fault == "acks0"
        assert main(["fuzz", "--replay", str(report), "--timeout", "0.2"]) == 1
        assert "reproduce" in capsys.readouterr().out
    with FaultyServer("none") as healthy:  # fixed: nothing reproduces any more
        assert main(["fuzz", "--replay", str(report), healthy.address, "--timeout", "0.2"]) == 0
        assert "0 of" in capsys.readouterr().out
    del address


def test_with_wait_restart_the_run_goes_on_once_a_supervisor_restarts_the_server(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    with FaultyServer("die") as dying:
        address = dying.address
        port = int(address.rpartition(":")[2])
        restarted: list[FaultyServer] = []

        def supervise() -> None:  # what systemd would do: start it again on the same port
            dying.dead.wait()
            time.sleep(0.3)
            restarted.append(FaultyServer("none", port).__enter__())

        supervisor = threading.Thread(target=supervise, daemon=True)
        supervisor.start()
        args = [
            address,
            "--requests",
            "300",
            "--timeout",
            "0.2",
            "--wait-restart",
            "10",
            "--report",
            str(report),
        ]
        code = main(["fuzz", *args])
        supervisor.join()
    restarted[0].__exit__()
    data = loads(report.read_text())
    assert code == 1 and data.restarts == 1 and data.stopped is None
    assert data.requests >= 300
    assert [f.kind.value for f in data.findings if f.server_gone] == ["crash"]


def test_a_server_that_is_not_there_gives_exit_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with FaultyServer("none") as server:
        address = server.address
    assert main(["fuzz", address, "--requests", "5"]) == 2
    assert "cannot connect" in capsys.readouterr().err


def test_a_remote_target_is_refused_without_allow_remote(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", "192.0.2.1:9092", "--requests", "5"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    assert (
        main(["fuzz", "[::1]:1", "--requests", "5"]) == 2
    )  # loopback passes the guard, then finds no server
    assert "--allow-remote" not in capsys.readouterr().err


def test_replaying_a_missing_or_bad_report_gives_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fuzz", "--replay", str(tmp_path / "absent.json")]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["fuzz", "--replay", str(bad)]) == 2
    assert "not a kafka-wire fuzz report" in capsys.readouterr().err


def test_rate_and_seconds_bound_the_run(tmp_path: Path) -> None:
    import time

    report = tmp_path / "report.json"
    with FaultyServer("none") as server:
        started = time.monotonic()
        assert (
            main(["fuzz", server.address, "--requests", "60", "--rate", "100", "--report", str(report)]) == 0
        )
        assert time.monotonic() - started >= 0.5  # 60 requests at 100/s
        assert (
            main(["fuzz", server.address, "--seconds", "0.5", "--timeout", "0.3", "--report", str(report)])
            == 0
        )
    data = loads(report.read_text())
    assert data.requests > 0 and 0.5 <= data.elapsed_s < 3


def test_the_same_seed_sends_the_same_requests(tmp_path: Path) -> None:
    def frames(seed: int) -> list[str]:
        report = tmp_path / f"r{seed}.json"
        with FaultyServer("close") as server:
            assert fuzz(server.address, report, 60, 1) == 1
        return [h for f in json.loads(report.read_text())["findings"] for h in f["original"]["burst"]]

    assert frames(4) == frames(4)


def test_a_finding_blamed_on_the_wrong_request_is_shrunk_to_the_right_one_and_its_detail() -> None:
    produce = encode_request(
        RequestHeader(correlation_id=7, client_id="t"), ProduceRequest(acks=1, timeout_ms=100), 3
    )
    metadata = encode_request(RequestHeader(correlation_id=8, client_id="t"), MetadataRequest(topics=[]), 1)
    blamed = Finding(
        kind=FindingKind.CRASH,
        detail="the server closed the connection with Produce v3 (generated) unanswered",
        api_key=ApiKey.PRODUCE,
        api_version=3,
        request_kind=RequestKind.GENERATED,
        original=Scenario((), (produce, metadata), 0),
    )
    with FaultyServer("close") as server:  # closes on Metadata
        host, _, port = server.address.rpartition(":")
        session = Session(Target(host, int(port)), 2.0)
        shrunk = shrink_finding(session, blamed, ADVERTISED, max_trials=10)
    # named as sent in the run; the reproducer may be shrunk further, down to its bytes
    assert shrunk.api_key == ApiKey.METADATA and shrunk.api_version == 1 and shrunk.versions == (1,)
    assert "Metadata v1" in shrunk.detail and "Produce" not in shrunk.detail
    assert shrunk.shrunk is not None and shrunk.shrunk.prefix == () and len(shrunk.shrunk.burst) == 1
    assert frame_api(shrunk.shrunk.burst[0]) == (ApiKey.METADATA, 0)  # its version bytes zeroed
