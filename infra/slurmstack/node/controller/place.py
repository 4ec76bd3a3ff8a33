"""place: each pass, the nodes of the pools with topology that still sit under the unplaced
leaf are placed under their network nodes in Slurm's topology (issue 27; docs/topology.md).

Only nodes not placed yet are asked about: a running instance never moves in EC2's network, so
a node is asked once, placed once, and left alone after (a scale event of a thousand nodes
costs ten DescribeInstanceTopology calls and one `scontrol update` per leaf, on one pass,
never a restart or a reconfigure). A node of an UltraServer pool also goes in its UltraServer's
block (EC2's CapacityBlockId; docs/topology.md), in the same update. An instance EC2 has no answer for yet (the API is
eventually consistent right after a launch; some types get none) is asked again after
RETRY_SECONDS, and stays under the unplaced leaf meanwhile: every node stays reachable by
every job, so a missing answer costs a job the topology's preference, never its scheduling.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...contract import TOPOLOGY_ASKED_PATH, UNPLACED_TOPOLOGY, NodeConfig, PoolRef
from ..context import Context, log, write_atomic
from .act import scontrol
from .observe import Observed
from .topology import (
    Placement,
    assign_blocks,
    block_of,
    describe_topology,
    placement_updates,
)

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


def occupied_blocks(observed: Observed, pool: PoolRef) -> dict[str, str]:
    """An UltraServer pool's blocks that hold a node now: block -> the instance of one node in
    it (running), whose CapacityBlockId says which UltraServer the block is. Slurm's records
    are the memory: nothing to lose when the head is replaced."""
    out: dict[str, str] = {}
    for node in observed.nodes:
        if pool.feature not in node.features:
            continue
        block = block_of(pool.block_topology, node.fields.get("Topology", ""))
        instance = observed.instance_at(node.address)
        if block and block not in out and instance is not None and instance.state == RUNNING:
            out[block] = instance.instance_id
    return out


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
    # An UltraServer pool with nodes to place: one node of each block it holds is asked about
    # too (in the same calls), to tell which UltraServer each block is.
    pool_of = _block_pools_of(observed, config, ask)
    occupied = {pool.name: occupied_blocks(observed, pool) for pool in set(pool_of.values())}
    members = [i for blocks in occupied.values() for i in blocks.values()]
    try:
        answers = describe_topology(ctx.aws.ec2(), [*ask.values(), *members])
    except Exception as exc:  # throttled, no permission, no answer: scheduling goes on
        log(f"control: EC2's instance topology did not answer ({exc}): nodes stay unplaced")
        return {"error": str(exc), "unplaced": len(waiting)}
    wanted = {
        name: answers[instance].network_nodes
        for name, instance in ask.items()
        if instance in answers and answers[instance].network_nodes
    }
    blocks = _blocks(ask, answers, pool_of, occupied)
    no_block = sorted(n for n in pool_of if n not in blocks)
    if no_block:
        log(f"control: no UltraServer block for {','.join(no_block)}: their pools' blocks "
            "partitions leave them out; their own partitions use them")  # fmt: skip
    updates = placement_updates(wanted, {}, blocks)
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
    result: dict[str, Any] = {
        "placed": placed,
        "unanswered": sorted(n for n in ask if n not in wanted and n not in blocks),
    }
    if pool_of:
        result["no_block"] = no_block
    return result


def _block_pools_of(
    observed: Observed, config: NodeConfig, ask: Mapping[str, str]
) -> dict[str, PoolRef]:
    """The nodes to place that belong to an UltraServer pool, with their pool."""
    pools = [p for p in config.pools if p.block_topology]
    out: dict[str, PoolRef] = {}
    for node in observed.nodes:
        if node.name not in ask:
            continue
        pool = next((p for p in pools if p.feature in node.features), None)
        if pool is not None:
            out[node.name] = pool
    return out


def _blocks(
    ask: Mapping[str, str],
    answers: Mapping[str, Placement],
    pool_of: Mapping[str, PoolRef],
    occupied: Mapping[str, Mapping[str, str]],
) -> dict[str, tuple[str, str]]:
    """node -> (block topology, block) for the UltraServer nodes that get a block this pass."""
    out: dict[str, tuple[str, str]] = {}
    for pool in set(pool_of.values()):
        joining = {
            name: answers[ask[name]].capacity_block if ask[name] in answers else None
            for name, of in pool_of.items()
            if of == pool
        }
        held = {
            block: answers[instance].capacity_block if instance in answers else None
            for block, instance in occupied[pool.name].items()
        }
        for name, block in assign_blocks(joining, held, pool.blocks).items():
            out[name] = (pool.block_topology, block)
    return out


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
