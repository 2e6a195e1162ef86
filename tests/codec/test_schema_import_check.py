"""The upstream-schema import check: it reads ``$KAFKA_WIRE_UPSTREAM_SCHEMAS`` (else ``../shared``
beside the checkout), and where no upstream definitions are found it says so in one line and passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kafka_wire.schema.importer import METADATA, SNAPSHOTS, UPSTREAM_ENV
from tests.conftest import ROOT


def run_importer(upstream: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, UPSTREAM_ENV: str(upstream)}
    return subprocess.run(
        [sys.executable, "-m", "kafka_wire.schema.importer", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_no_upstream_definitions_is_one_line_and_success(tmp_path: Path) -> None:
    result = run_importer(tmp_path, "--check")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == (
        f"schema import check not run: no upstream definitions in {tmp_path} "
        f"(set {UPSTREAM_ENV} or place ../shared beside the checkout)\n"
    )


def test_upstream_definitions_named_by_the_variable_are_checked(tmp_path: Path) -> None:
    # A tiny upstream folder: one data structure in both snapshots.
    upstream = tmp_path / "upstream"
    toy = {
        "type": "data",
        "name": "ToyData",
        "validVersions": "0-1",
        "flexibleVersions": "1+",
        "fields": [{"name": "Count", "type": "int32", "versions": "0+", "about": "dropped"}],
    }
    for snapshot in SNAPSHOTS:
        (upstream / snapshot.folder).mkdir(parents=True)
        (upstream / snapshot.folder / "ToyData.json").write_text(json.dumps(toy))
    schemas = tmp_path / "schemas"
    schemas.mkdir()

    # The check runs against those definitions: the empty schemas folder differs from them ...
    stale = run_importer(upstream, "--check", "--out", str(schemas))
    assert (stale.returncode, stale.stdout) == (1, "")
    assert stale.stderr == "schemas/data/ToyData.json is not what the importer builds\n"
    # ... the importer writes them, and then the check passes.
    written = run_importer(upstream, "--out", str(schemas))
    assert written.returncode == 0, written.stderr
    assert sorted(p.relative_to(schemas).as_posix() for p in schemas.rglob("*.json")) == ["data/ToyData.json"]
    assert run_importer(upstream, "--check", "--out", str(schemas)).returncode == 0


def test_one_snapshot_alone_is_an_error(tmp_path: Path) -> None:
    (tmp_path / SNAPSHOTS[0].folder).mkdir()
    result = run_importer(tmp_path, "--check")
    assert result.returncode != 0
    assert "upstream reference folder is missing" in result.stderr


def test_metadata_records_are_imported_and_kept_when_their_upstream_is_absent(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    for snapshot in SNAPSHOTS:
        (upstream / snapshot.folder).mkdir(parents=True)
    toy = {
        "apiKey": 99,
        "type": "metadata",
        "name": "ToyRecord",
        "validVersions": "0",
        "flexibleVersions": "0+",
        "fields": [{"name": "Id", "type": "int32", "versions": "0+"}],
    }
    (upstream / METADATA.folder).mkdir()
    (upstream / METADATA.folder / "ToyRecord.json").write_text(json.dumps(toy))
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    assert run_importer(upstream, "--out", str(schemas)).returncode == 0
    written = json.loads((schemas / "metadata" / "ToyRecord.json").read_text())
    assert (written["kind"], written["api_key"]) == ("metadata", 99)
    # Without the metadata folder upstream, the imported records stay and the check passes.
    (upstream / METADATA.folder / "ToyRecord.json").unlink()
    (upstream / METADATA.folder).rmdir()
    assert run_importer(upstream, "--check", "--out", str(schemas)).returncode == 0
    assert run_importer(upstream, "--out", str(schemas)).returncode == 0
    assert (schemas / "metadata" / "ToyRecord.json").exists()
