"""diagnostic: DCGM's level-2 diagnostic once per instance, where DCGM is installed."""

from __future__ import annotations

from pathlib import Path

from node.support import Answers, make_node
from slurmstack.contract import Health
from slurmstack.node.health.diagnostic import DIAG, deep_diagnostic

GPU = Health(gpus=8, deep_diagnostic=True)
FAILED = """\
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
| Memory                    | Pass - All                                     |
| Diagnostic                | Fail - GPU: 3                                  |
+---------------------------+------------------------------------------------+
"""


def test_first_boot_runs_it_once_per_instance(tmp_path: Path) -> None:
    run = Answers()
    node = make_node(tmp_path, None, "train", run=run)
    assert deep_diagnostic(node, GPU, "i-1") == []
    assert deep_diagnostic(node, GPU, "i-1") == []  # a reboot: not again
    assert run.calls.count(list(DIAG)) == 1
    assert deep_diagnostic(node, GPU, "i-2") == []  # another instance (from a snapshot): again
    assert run.calls.count(list(DIAG)) == 2


def test_a_failed_test_fails_the_boot(tmp_path: Path) -> None:
    node = make_node(tmp_path, None, "train", run=Answers({DIAG: (0, FAILED)}))
    (finding,) = deep_diagnostic(node, GPU, "i-1")
    assert finding.reason == "slurmstack:gpu-diag: dcgmi diag -r 2 failed: Diagnostic"
    node = make_node(tmp_path / "b", None, "train", run=Answers({DIAG: (124, "")}))
    assert "exit 124" in deep_diagnostic(node, GPU, "i-1")[0].detail


def test_skipped_without_dcgm_or_when_off(tmp_path: Path) -> None:
    run = Answers({("dcgmi",): (127, "")})
    node = make_node(tmp_path, None, "train", run=run)
    assert deep_diagnostic(node, GPU, "i-1") == []
    assert deep_diagnostic(node, Health(gpus=8), "i-1") == []
    assert run.calls == [list(DIAG)]
