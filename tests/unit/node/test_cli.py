"""The agent's command line: --root, and a failed step's message instead of a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.node import cli


def test_a_failed_step_is_one_line_and_exit_1(tmp_path: Path, capsys) -> None:
    assert cli.main(["--root", str(tmp_path), "health"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("slurmstack-node: health: ") and "node.json is missing" in err
    assert "Traceback" not in err


def test_an_unknown_subcommand_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["no-such-step"])
    assert exit_.value.code == 2
