"""``kafka-wire fuzz`` against real servers: ``kafka-wire serve`` (plain and with SASL PLAIN and
SCRAM) and Tansu, each a short bounded run; the reports are read back."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_wire.netfuzz.report import Report, loads
from tests.e2e.brokers import BrokerProcess, kafka_wire, kafka_wire_cli, tansu
from tests.e2e.test_sasl import USERS, SaslBroker


def run_fuzz(
    address: str, report: Path, *extra: str, answer_timeout: str = "5", timeout_s: float = 240
) -> tuple[int, Report | None, str]:
    run = subprocess.run(
        [
            str(kafka_wire_cli()),
            "fuzz",
            address,
            "--report",
            str(report),
            "--timeout",
            answer_timeout,
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    parsed = loads(report.read_text()) if report.exists() else None
    return run.returncode, parsed, run.stdout + run.stderr


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    broker = kafka_wire(tmp_path_factory.mktemp("serve"))
    broker.start()
    yield broker
    broker.close()


@pytest.fixture(scope="module")
def sasl_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    plain = kafka_wire(tmp_path_factory.mktemp("sasl"))
    broker = SaslBroker(plain.name, plain.address, plain.data_dir, plain.log_path, persistent=True)
    broker.start()
    yield broker
    broker.close()


def test_kafka_wire_serve_survives_a_few_thousand_requests_with_no_finding(
    serve: BrokerProcess, tmp_path: Path
) -> None:
    status, report, output = run_fuzz(
        serve.bootstrap, tmp_path / "r.json", "--requests", "2000", "--seed", "11"
    )
    assert status == 0, output
    assert report is not None and report.requests >= 2000 and not report.findings
    assert report.sent["mutated"] > 100 and report.sent["unadvertised"] > 10
    assert serve.running()


@pytest.mark.parametrize("mechanism", list(USERS))
def test_fuzzing_past_sasl(sasl_serve: SaslBroker, mechanism: str, tmp_path: Path) -> None:
    user, password = USERS[mechanism]
    sasl = ["--sasl-mechanism", mechanism, "--sasl-username", user, "--sasl-password", password]
    status, report, output = run_fuzz(sasl_serve.bootstrap, tmp_path / "r.json", "--requests", "300", *sasl)
    assert status == 0, output
    assert report is not None and report.sasl_mechanism == mechanism and report.outcomes["answered"] > 20
    assert report.connections > 1  # every close was followed by a new, authenticated connection


def test_without_credentials_a_sasl_server_cannot_be_fuzzed(sasl_serve: SaslBroker, tmp_path: Path) -> None:
    sasl = ["--sasl-mechanism", "PLAIN", "--sasl-username", "alice", "--sasl-password", "wrong"]
    status, report, output = run_fuzz(sasl_serve.bootstrap, tmp_path / "r.json", "--requests", "10", *sasl)
    assert status == 2 and report is None, output
    assert "cannot connect" in output


def test_a_short_run_against_tansu_completes(tmp_path: Path) -> None:
    broker = tansu(tmp_path)
    broker.start()
    try:
        # bounded by time: Tansu closes on many requests (and may die), each costing replays
        status, report, output = run_fuzz(
            broker.bootstrap,
            tmp_path / "r.json",
            "--seconds",
            "8",
            "--seed",
            "5",
            "--shrink-trials",
            "2",
            answer_timeout="1",
        )
    finally:
        broker.close()
    assert status in (0, 1), output  # a finding in Tansu is the tool's result, not a failure
    assert report is not None and report.requests > 20, output
    assert report is not None and len(report.advertised) > 10


def test_the_console_script_prints_a_progress_bar(serve: BrokerProcess, tmp_path: Path) -> None:
    status, _, output = run_fuzz(serve.bootstrap, tmp_path / "r.json", "--requests", "50")
    assert status == 0 and "[##############################] " in output and "requests/s" in output


def test_sigterm_stops_the_run_and_the_report_of_what_ran_is_written(
    serve: BrokerProcess, tmp_path: Path
) -> None:
    report_path = tmp_path / "r.json"
    command = [
        str(kafka_wire_cli()),
        "fuzz",
        serve.bootstrap,
        "--seconds",
        "60",
        "--report",
        str(report_path),
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        assert process.stderr is not None
        # Not a terminal: a progress line every tenth of the run (6 s); the first one that
        # counts a request says the run is under way.
        for line in process.stderr:
            if line.startswith("[") and not line.split("] ", 1)[1].startswith("0 requests"):
                break
        process.terminate()
        stdout, _ = process.communicate(timeout=60)
    report = loads(report_path.read_text())
    assert process.returncode == 0, stdout
    assert report.stopped == "interrupted (Ctrl-C or SIGTERM)" and report.requests > 0
    assert "stopped early: interrupted" in stdout
