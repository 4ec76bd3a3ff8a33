"""diagnostic: DCGM's level-2 diagnostic once per instance, where DCGM is installed."""

from __future__ import annotations

from pathlib import Path

from slurmstack.contract import Health
from slurmstack.node.health.dcgm_diag import failed_tests
from slurmstack.node.health.diagnostic import DIAG, deep_diagnostic
from support.node import Answers, make_node

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
    assert finding.reason == "slurmstack:gpu-diag: dcgmi diag -r 2 failed: Diagnostic on GPU 3"
    node = make_node(tmp_path / "b", None, "train", run=Answers({DIAG: (124, "")}))
    assert "exit 124" in deep_diagnostic(node, GPU, "i-1")[0].detail


def test_skipped_without_dcgm_or_when_off(tmp_path: Path) -> None:
    run = Answers({("dcgmi",): (127, "")})
    node = make_node(tmp_path, None, "train", run=run)
    assert deep_diagnostic(node, GPU, "i-1") == []
    assert deep_diagnostic(node, Health(gpus=8), "i-1") == []
    assert run.calls == [list(DIAG)]


DCGMI_DATA = Path(__file__).resolve().parent / "data" / "dcgmi"


def recorded(*names: str) -> str:
    return "".join((DCGMI_DATA / name).read_text() for name in names)


def test_a_failure_on_a_continuation_row_names_its_test_and_gpu(tmp_path: Path) -> None:
    """DCGM 3.3.1's table (NVIDIA/go-dcgm#52): "GPU Memory" passes on GPU 1 and fails on GPU 0
    on the row below, whose test column is blank; the warning after it says why."""
    table = recorded("dcgm-3.3.1-head.txt", "dcgm-3.3.1-gpu-memory-fail.txt")
    node = make_node(tmp_path, None, "train", run=Answers({DIAG: (0, table)}))
    (finding,) = deep_diagnostic(node, GPU, "i-1")
    assert finding.reason.startswith(
        "slurmstack:gpu-diag: dcgmi diag -r 2 failed: GPU Memory on GPU 0: GPU 0 Error using "
        "CUDA API cuCtxCreate Check DCGM and system logs for errors."
    )


def test_the_failed_tests_of_recorded_tables() -> None:
    (memory,) = failed_tests(recorded("dcgm-3.3.1-gpu-memory-fail.txt"))
    assert (memory.test, memory.gpus) == ("GPU Memory", ["0"])
    assert memory.warning.endswith(
        "Unable to create CUDA context: 'CUDA-capable device(s) is/are busy or unavailable'."
    )  # wrapped mid-word by dcgmi, joined back
    assert failed_tests(recorded("dcgm-3.3.1-head.txt")) == []
    assert failed_tests(recorded("dcgm-4.2.3-pass.txt")) == []  # GPU0: Pass rows
