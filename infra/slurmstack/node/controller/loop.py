"""One pass of the controller (observe, decide, act under the lock), and the pools' circuit
breakers as an operator sees and resets them."""

from __future__ import annotations

from typing import Any

from ..context import AgentError, Context
from . import observe
from . import state as memory
from .act import act, record
from .actions import SUSPENDED_PROCESS, iso
from .dbd_agent import watch_dbd_agent
from .decide import decide
from .full_save import ask_for_full_save
from .place import place
from .registrations import save_new_registrations


def control(ctx: Context, dry_run: bool = False) -> dict[str, Any]:
    """One pass; what it did (or, dry, would do)."""
    config = ctx.config()
    if not config.is_head or config.repair is None:
        raise AgentError("control runs on the head node (node.json has no repair policy)")
    with memory.locked(ctx) as mine:
        if not mine:
            return {"skipped": "another pass holds the controller's lock"}
        observed = observe.observe(ctx, config)
        decision = decide(observed, config.pools, config.repair, memory.load(ctx))
        if dry_run:
            return {
                "would": [{"action": a.kind.value, **_fields(a)} for a in decision.actions],
                "notes": list(decision.notes),
            }
        for note in decision.notes:
            record(ctx, {"time": iso(observed.now), "note": note})
        # The memory is saved first: a replacement counts for the breaker even if its call failed.
        memory.save(ctx, decision.state)
        done = act(ctx, decision.actions)
        # With a backup controller: nodes it would not know after a takeover, saved now.
        saved = save_new_registrations(ctx, observed.nodes)
        # Nodes that joined, placed under their network nodes in Slurm's topology.
        topology = place(ctx, config, observed)
        # Last (they restart slurmctld): a new cluster's first full state save, asked for; a
        # stalled accounting agent, restarted.
        full_save = ask_for_full_save(ctx, observed.now)
        dbd_agent = None if full_save else watch_dbd_agent(ctx, observed.now)
    result: dict[str, Any] = {"actions": done, "notes": list(decision.notes), "aws": observed.aws}
    if saved:
        result["saved_registrations"] = saved
    if topology is not None:
        result["topology"] = topology
    if full_save is not None:
        result["full_save"] = full_save
    if dbd_agent is not None:
        result["dbd_agent_restarted"] = dbd_agent
    return result


def _fields(action: Any) -> dict[str, str]:
    return {k: v for k, v in vars(action).items() if v and k != "kind"}


def breakers(ctx: Context) -> dict[str, Any]:
    config = ctx.config()
    policy = config.repair
    if policy is None:
        raise AgentError("breaker runs on the head node (node.json has no repair policy)")
    state = memory.load(ctx)
    now = float(ctx.clock())
    return {
        pool.name: {
            "open": pool.name in state.breakers,
            **(
                {
                    "since": iso(state.breakers[pool.name].since),
                    "why": state.breakers[pool.name].why,
                }
                if pool.name in state.breakers
                else {}
            ),
            "recent_replacements": state.recent(pool.name, now, policy),
            "limit": f"{policy.breaker_replacements} in {policy.breaker_window_minutes} min",
        }
        for pool in config.pools
    }


def reset_breaker(ctx: Context, pool_name: str) -> dict[str, Any]:
    """Close a pool's breaker: its replacement history and its nodes' reboots forgotten, its
    group replacing Unhealthy instances again; the nodes held get replaced on the next pass."""
    config = ctx.config()
    pool = next((p for p in config.pools if p.name == pool_name), None)
    if pool is None:
        names = ", ".join(p.name for p in config.pools)
        raise AgentError(f"no pool {pool_name!r} (pools: {names})")
    with memory.locked(ctx) as mine:
        if not mine:
            raise AgentError("a controller pass holds the lock: try again in a moment")
        state = memory.load(ctx)
        memory.save(ctx, state.reset(pool.name, pool.node_name_prefix))
    if pool.group:
        ctx.aws.autoscaling().resume_processes(
            AutoScalingGroupName=pool.group, ScalingProcesses=[SUSPENDED_PROCESS]
        )
    line = {
        "time": iso(float(ctx.clock())),
        "action": "reset-breaker",
        "pool": pool.name,
        "ok": True,
    }
    record(ctx, line)
    return line
