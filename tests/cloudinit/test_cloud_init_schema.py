"""Every rendered cloud-init document passes `cloud-init schema` (cloud-init 22.4 here;
Ubuntu 24.04 runs a newer one). With CI=true a missing cloud-init fails the test."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers_examples import EXAMPLE_IDS, example_plan
from slurmstack.render import USER_DATA_LIMIT, roles, user_data

pytestmark = pytest.mark.cloudinit


def cloud_init() -> str:
    path = shutil.which("cloud-init")
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but cloud-init is not installed (apt: cloud-init)")
        pytest.skip("cloud-init is not installed")
    return path


def schema(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [cloud_init(), "schema", "--config-file", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_every_document_passes_schema(example: str, tmp_path: Path) -> None:
    plan = example_plan(example)
    for role in roles(plan):
        text = user_data(plan, role)
        assert text.startswith("#cloud-config\n")
        assert len(text.encode()) < USER_DATA_LIMIT
        path = tmp_path / f"{role}.yaml"
        path.write_text(text)
        result = schema(path)
        assert result.returncode == 0, (role, result.stdout, result.stderr)
        assert "Valid cloud-config" in result.stdout
        # YAML as cloud-init reads it: the files it writes are the ones rendered.
        doc = yaml.safe_load(text)
        paths = [f["path"] for f in doc["write_files"]]
        assert paths == [
            "/etc/slurmstack/bootstrap.env",
            "/usr/local/sbin/slurmstack-bootstrap",
            "/etc/slurmstack/imds-firewall.nft",
            "/etc/systemd/system/slurmstack-imds-firewall.service",
        ]


def test_schema_check_catches_an_invalid_document(tmp_path: Path) -> None:
    """The validator is not a rubber stamp: a wrong type fails it."""
    path = tmp_path / "bad.yaml"
    path.write_text("#cloud-config\nruncmd: 5\npackages: {a: b}\n")
    result = schema(path)
    assert result.returncode != 0
