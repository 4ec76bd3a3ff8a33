"""place: each pass, the nodes of the pools with topology that still sit under the unplaced
leaf are placed under their network nodes in Slurm's topology (issue 27; docs/topology.md).

Only nodes not placed yet are asked about: a running instance never moves in EC2's network, so
a node is asked once, placed once, and left alone after (a scale event of a thousand nodes
costs ten DescribeInstanceTopology calls and one `scontrol update` per leaf, on one pass,
never a restart or a reconfigure). An instance EC2 has no answer for yet (the API is
eventually consistent right after a launch; some types get none) is asked again after
RETRY_SECONDS, and stays under the unplaced leaf meanwhile: every node stays reachable by
every job, so a missing answer costs a job the topology's preference, never its scheduling.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...contract import TOPOLOGY_ASKED_PATH, UNPLACED_TOPOLOGY, NodeConfig
from ..context import Context, log, write_atomic
from .act import scontrol
from .observe import Observed
from .topology import describe_topology, placement_updates

# An instance without an answer is asked again after this long (seconds): a new instance's
# answer usually appears within a pass or two; a type with none costs a call every few minutes.
RETRY_SECONDS = 180
RUNNING = "running"


def unplaced(observed: Observed, config: NodeConfig) -> dict[str, str]:
    """Slurm node -> instance id, for the nodes of the pools with topology that are under the
    unplaced leaf (or under none) and whose instance is running."""
    features = {p.feature for p in config.pools if p.topology}
    out: dict[str, str] = {}
    for node in observed.nodes:
        if not features & node.features:
            continue
        if node.fields.get("Topology", UNPLACED_TOPOLOGY) != UNPLACED_TOPOLOGY:
            continue
        instance = observed.instance_at(node.address)
        if instance is not None and instance.state == RUNNING:
            out[node.name] = instance.instance_id
    return out


def due(waiting: Mapping[str, str], asked: Mapping[str, float], now: float) -> dict[str, str]:
    """The waiting nodes whose instance was never asked about, or not for RETRY_SECONDS."""
    return {
        name: instance
        for name, instance in waiting.items()
        if now - asked.get(instance, float("-inf")) >= RETRY_SECONDS
    }


def place(ctx: Context, config: NodeConfig, observed: Observed) -> dict[str, Any] | None:
    """One pass's placements; None when there was nothing to ask."""
    if not observed.aws:
        return None
    waiting = unplaced(observed, config)
    live = set(waiting.values())  # looked up per remembered instance: a set, not a scan
    asked = _load(ctx)
    ask = due(waiting, asked, observed.now)
    if not ask:
        kept = {i: t for i, t in asked.items() if i in live}
        if kept != asked:
            _save(ctx, kept)
        return None
    try:
        answers = describe_topology(ctx.aws.ec2(), ask.values())
    except Exception as exc:  # throttled, no permission, no answer: scheduling goes on
        log(f"control: EC2's instance topology did not answer ({exc}): nodes stay unplaced")
        return {"error": str(exc), "unplaced": len(waiting)}
    wanted = {
        name: answers[instance].network_nodes
        for name, instance in ask.items()
        if instance in answers and answers[instance].network_nodes
    }
    updates = placement_updates(wanted, {})
    placed: dict[str, list[str]] = {}
    for value, names in updates.items():
        try:
            scontrol(ctx, "update", f"nodename={','.join(names)}", f"topology={value}")
        except RuntimeError as exc:
            log(f"control: cannot place {','.join(names)} under {value}: {exc}")
            continue
        placed[value] = names
    done = {ask[name] for names in placed.values() for name in names}
    memory = {i: t for i, t in asked.items() if i in live and i not in done}
    memory.update({i: observed.now for i in ask.values() if i not in done})
    _save(ctx, memory)
    return {"placed": placed, "unanswered": sorted(n for n in ask if n not in wanted)}


def _load(ctx: Context) -> dict[str, float]:
    path = ctx.path(TOPOLOGY_ASKED_PATH)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except ValueError:  # a torn file costs one extra call per node, nothing more
        return {}
    return {str(i): float(t) for i, t in data.items()}


def _save(ctx: Context, asked: Mapping[str, float]) -> None:
    text = json.dumps(dict(sorted(asked.items())), indent=1) + "\n"
    write_atomic(ctx.path(TOPOLOGY_ASKED_PATH), text.encode(), 0o600)
