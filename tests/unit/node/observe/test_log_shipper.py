"""follow-logs against moto's CloudWatch Logs: each file's lines in its source's group, the
instance's stream, nothing twice across restarts, rotation and truncation, and batches cut at
PutLogEvents' limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurmstack.contract import (
    EVENTS_LOG_PATH,
    HEALTH_LOG_PATH,
    SLURMCTLD_LOG_PATH,
    SLURMD_LOG_PATH,
    LogSource,
    log_group_name,
)
from slurmstack.node.context import Context
from slurmstack.node.observe import log_shipper
from slurmstack.node.observe.log_shipper import (
    EVENT_OVERHEAD_BYTES,
    MAX_BATCH_BYTES,
    MAX_BATCH_EVENTS,
    MAX_EVENT_BYTES,
    Line,
    batches,
    follow,
    lines_of,
    pieces,
)
from slurmstack.render.node import node_config
from support.examples import example_plan
from support.node import INSTANCE_ID as INSTANCE
from support.node import shipping_node

PLAN = example_plan("p5-training")


def node(tmp_path: Path, aws, head: bool = False) -> Context:
    return shipping_node(tmp_path, aws, PLAN, node_config(PLAN, None if head else PLAN.pools[0]))


def append(ctx: Context, node_path: str, text: str) -> Path:
    path = ctx.path(node_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(text)
    return path


def shipped(aws, source: LogSource) -> list[str]:
    logs = aws.client("logs", region_name=PLAN.region)
    group = log_group_name(PLAN.name, source)
    try:
        events = logs.get_log_events(logGroupName=group, logStreamName=INSTANCE,
                                     startFromHead=True)["events"]  # fmt: skip
    except logs.exceptions.ResourceNotFoundException:
        return []
    return [e["message"] for e in events]


def test_a_workers_files_go_to_their_groups_in_the_instances_stream(aws, tmp_path: Path) -> None:
    ctx = node(tmp_path, aws)
    append(ctx, SLURMD_LOG_PATH, "[2025-06-15T15:00:00] slurmd started\nsecond\n")
    append(ctx, HEALTH_LOG_PATH, "gpu-xid ok\n")
    append(ctx, EVENTS_LOG_PATH, '{"event": "joined"}\n')
    append(ctx, SLURMCTLD_LOG_PATH, "the head's: a worker leaves it alone\n")
    assert follow(ctx, once=True) == 4
    assert shipped(aws, LogSource.SLURMD) == ["[2025-06-15T15:00:00] slurmd started", "second"]
    assert shipped(aws, LogSource.HEALTH_CHECK) == ["gpu-xid ok"]
    assert shipped(aws, LogSource.AGENT) == ['{"event": "joined"}']
    assert shipped(aws, LogSource.SLURMCTLD) == []


def test_the_heads_slurmctld_log_goes_to_its_group(aws, tmp_path: Path) -> None:
    ctx = node(tmp_path, aws, head=True)
    append(ctx, SLURMCTLD_LOG_PATH, "slurmctld version 24.11 started\n")
    append(ctx, SLURMD_LOG_PATH, "no slurmd on the head\n")
    follow(ctx, once=True)
    assert shipped(aws, LogSource.SLURMCTLD) == ["slurmctld version 24.11 started"]
    assert shipped(aws, LogSource.SLURMD) == []


def test_nothing_is_sent_twice_across_restarts_and_half_lines_wait(aws, tmp_path: Path) -> None:
    ctx = node(tmp_path, aws)
    append(ctx, SLURMD_LOG_PATH, "one\ntwo\nthr")
    assert follow(ctx, once=True) == 2
    assert follow(ctx, once=True) == 0  # a new process: the cursor file, not memory
    append(ctx, SLURMD_LOG_PATH, "ee\nfour\n")
    assert follow(ctx, once=True) == 2
    assert follow(ctx, once=True) == 0
    assert shipped(aws, LogSource.SLURMD) == ["one", "two", "three", "four"]


def test_a_rotated_file_is_finished_before_its_successor(aws, tmp_path: Path) -> None:
    ctx = node(tmp_path, aws)
    path = append(ctx, SLURMD_LOG_PATH, "a\n")
    follow(ctx, once=True)
    append(ctx, SLURMD_LOG_PATH, "b, written before the rotation\n")
    os.rename(path, f"{path}.1")  # logrotate's rename (create mode)
    append(ctx, SLURMD_LOG_PATH, "c, in the new file\n")
    follow(ctx, once=True)
    follow(ctx, once=True)
    assert shipped(aws, LogSource.SLURMD) == [
        "a", "b, written before the rotation", "c, in the new file"
    ]  # fmt: skip


def test_a_file_truncated_in_place_is_read_from_its_start(aws, tmp_path: Path) -> None:
    ctx = node(tmp_path, aws)
    path = append(ctx, SLURMD_LOG_PATH, "a long line before copytruncate\n")
    follow(ctx, once=True)
    path.write_text("")  # copytruncate: same inode, size 0
    append(ctx, SLURMD_LOG_PATH, "new\n")
    follow(ctx, once=True)
    assert shipped(aws, LogSource.SLURMD) == ["a long line before copytruncate", "new"]


def test_a_failed_call_moves_no_cursor(aws, tmp_path: Path) -> None:
    ctx = node(tmp_path, aws)
    append(ctx, SLURMD_LOG_PATH, "kept for the next pass\n")
    append(ctx, HEALTH_LOG_PATH, "another group: not held up\n")
    aws.client("logs", region_name=PLAN.region).delete_log_group(
        logGroupName=log_group_name(PLAN.name, LogSource.SLURMD)
    )
    with pytest.raises(Exception, match=r"ResourceNotFound|does not exist"):
        follow(ctx, once=True)
    assert shipped(aws, LogSource.HEALTH_CHECK) == ["another group: not held up"]
    node(tmp_path, aws)  # the group is back
    follow(ctx, once=True)
    assert shipped(aws, LogSource.SLURMD) == ["kept for the next pass"]


def test_batches_respect_the_count_and_the_bytes_with_26_per_event() -> None:
    many = [Line("x", i) for i in range(MAX_BATCH_EVENTS + 1)]
    assert [len(b) for b in batches(many)] == [MAX_BATCH_EVENTS, 1]
    big = [Line("y" * 100_000, i) for i in range(21)]
    cut = list(batches(big))
    for batch in cut:
        assert (
            sum(len(ln.message.encode()) + EVENT_OVERHEAD_BYTES for ln in batch) <= MAX_BATCH_BYTES
        )
    assert [len(b) for b in cut] == [10, 10, 1]
    # Exactly at the limit fits; one byte more does not.
    exact = MAX_BATCH_BYTES // 2 - EVENT_OVERHEAD_BYTES
    assert [len(b) for b in batches([Line("z" * exact, 0), Line("z" * exact, 1)])] == [2]
    assert [len(b) for b in batches([Line("z" * exact, 0), Line("z" * (exact + 1), 1)])] == [1, 1]


def test_a_line_over_the_event_limit_is_cut_between_characters() -> None:
    text = "é" * MAX_EVENT_BYTES  # two bytes each
    parts = pieces(text)
    assert all(len(p.encode()) <= MAX_EVENT_BYTES for p in parts)
    assert "".join(parts) == text and len(parts) == 2
    lines = lines_of(("é" * MAX_EVENT_BYTES + "\nnext\n").encode(), 100, finished=False)
    assert [ln.message for ln in lines][-1] == "next"
    assert lines[-1].end == 100 + 2 * MAX_EVENT_BYTES + 1 + 5
    assert lines[0].end == 100  # the line's first piece: a restart resends the line whole


def test_a_long_line_ships_in_pieces_through_moto(aws, tmp_path: Path) -> None:
    ctx = node(tmp_path, aws)
    append(ctx, SLURMD_LOG_PATH, "q" * (MAX_EVENT_BYTES + 10) + "\n")
    assert follow(ctx, once=True) == 2
    assert [len(m) for m in shipped(aws, LogSource.SLURMD)] == [MAX_EVENT_BYTES, 10]


def test_the_agent_has_follow_logs_and_every_node_runs_it() -> None:
    from slurmstack.contract import LOG_SHIPPER_UNIT, MONITORING_UNITS, unit_path
    from slurmstack.node.commands import COMMANDS
    from slurmstack.render.monitoring import head_monitoring_files, pool_monitoring_files

    assert "follow-logs" in {c.name.value for c in COMMANDS}
    assert LOG_SHIPPER_UNIT in MONITORING_UNITS  # sync-config enables it
    for files in (head_monitoring_files(PLAN), pool_monitoring_files(PLAN, PLAN.pools[0])):
        unit = files[unit_path(LOG_SHIPPER_UNIT)]
        assert "ExecStart=/usr/local/bin/slurmstack-node follow-logs\n" in unit
        assert "Restart=always" in unit and "User=" not in unit
    assert log_shipper.MAX_READ_BYTES > MAX_BATCH_BYTES
