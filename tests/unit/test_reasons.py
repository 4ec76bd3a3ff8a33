"""The one reason grammar (slurmstack.contract.reasons): every check a node can be drained for
is built by reason() and read back by parse_reason(), a long detail is cut the same way whoever
drains the node, Slurm's stacked reasons are split in one place, and every check has a row in
the repair table the docs print."""

from __future__ import annotations

import pytest

from slurmstack.contract import (
    CONTROLLER_NOTES,
    REASON_MAX_CHARACTERS,
    REASON_PREFIX,
    SLURM_REASON_SEPARATOR,
    Check,
    is_our_reason,
    parse_reason,
    reason,
    reason_parts,
)
from slurmstack.node.health.findings import Finding
from slurmstack.rules.health_policy import CAUSES

DETAIL = "79 pid=12, GPU has fallen off the bus (PCI:0000:10:1c)"


@pytest.mark.parametrize("check", list(Check), ids=str)
def test_every_check_round_trips(check: Check) -> None:
    text = reason(check, DETAIL)
    assert text == f"{REASON_PREFIX}{check.value}: {DETAIL}"
    assert parse_reason(text) == (check.value, DETAIL) and is_our_reason(text)


@pytest.mark.parametrize("check", list(Check), ids=str)
def test_every_check_has_a_row_in_the_repair_table(check: Check) -> None:
    causes = {c.cause.split(":", 1)[0] for c in CAUSES}
    assert check.value in causes


def test_a_reason_is_one_line() -> None:
    assert reason(Check.EFA_PORT, "rdmap0s6 port 1\n  is\tDOWN ") == (
        "slurmstack:efa-port: rdmap0s6 port 1 is DOWN"
    )


def test_a_long_detail_is_cut_the_same_way_whoever_drains_the_node() -> None:
    """The health check (a Finding), the power programs (EC2's error) and acceptance all build
    their reason with reason(): one limit, one mark."""
    detail = "InsufficientInstanceCapacity: " + "We currently do not have capacity. " * 20
    texts = {
        "health": Finding(Check.DISK_FULL, detail).reason,
        "power": reason(Check.LAUNCH, detail),
        "acceptance": reason(Check.NCCL_ALLREDUCE, detail),
    }
    for who, text in texts.items():
        assert len(text) == REASON_MAX_CHARACTERS and text.endswith("..."), who
        _, cut = parse_reason(text) or ("", "")
        assert detail.startswith(cut.removesuffix("...")), who
    short = reason(Check.LAUNCH, "x" * (REASON_MAX_CHARACTERS - len("slurmstack:launch: ")))
    assert len(short) == REASON_MAX_CHARACTERS and not short.endswith("...")


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("", ()),
        ("Not responding", ("Not responding",)),
        # Slurm >= 23.02 stacks its own reason onto the one a node has.
        (f"ECC errors on GPU 3{SLURM_REASON_SEPARATOR}Not responding",
         ("ECC errors on GPU 3", "Not responding")),
        # The controller's notes are not part of a reason.
        (f"{DETAIL[:10]}; replacing i-0abc", (DETAIL[:10],)),
        (f"slurmstack:gpu-xid: 79 x; held: pool gpu's breaker is open{SLURM_REASON_SEPARATOR}"
         "Not responding", ("slurmstack:gpu-xid: 79 x", "Not responding")),
        ("Not responding; rebooting", ("Not responding",)),
    ],
)  # fmt: skip
def test_slurm_s_stacked_reasons_are_split_in_one_place(text: str, parts: tuple[str, ...]) -> None:
    assert reason_parts(text) == parts


@pytest.mark.parametrize(
    "text",
    ["Not responding", "slurmstack:", "slurmstack:GPU: x", "ECC errors [slurmstack:gpu-xid: 1]"],
)
def test_other_text_is_not_ours(text: str) -> None:
    assert parse_reason(text) is None and not is_our_reason(text)


def test_the_controller_notes_are_the_contract_s() -> None:
    assert CONTROLLER_NOTES == ("; replacing ", "; held: ", "; rebooting")
