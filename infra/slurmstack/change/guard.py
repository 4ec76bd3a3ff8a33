"""The refusals of `pulumi up` (the program's preflight, before any resource is registered):

- replacing or deleting storage that storage.protect covers, unless the operator named it
  in the stack config ``slurmstack:acceptDataLoss``: the message says what would be lost
  and how to go ahead on purpose;
- touching a pool's launch template while that pool's instance refresh still runs: the
  provider would cancel the running refresh (its drain can hold a batch for hours) and give
  up after its own wait, leaving the pool half rolled. The message gives the refresh's
  progress and what to do.

Pure: the change plan and the refreshes observed are given (slurmstack.stack.deployed reads
them from AWS).
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.change.diff import Action
from slurmstack.change.effects import DATA_LOST, GROUP, GROUP_TEMPLATE, VOLUME
from slurmstack.change.plan import ChangePlan, PlannedChange

ACCEPT_KEY = "acceptDataLoss"  # stack config slurmstack:acceptDataLoss: logical names
# DescribeInstanceRefreshes statuses of a refresh that has not finished (EC2 Auto Scaling
# API Reference, InstanceRefresh.Status).
UNFINISHED = {"Pending", "InProgress", "Cancelling", "RollbackInProgress", "Baking"}


@dataclass(frozen=True)
class Refresh:
    group: str
    status: str
    percentage_complete: int | None = None
    instances_to_update: int | None = None
    start_time: str | None = None

    @property
    def running(self) -> bool:
        return self.status in UNFINISHED


def _guarded_storage(planned: PlannedChange) -> bool:
    change = planned.change
    if change.action not in (Action.REPLACE, Action.DELETE):
        return False
    if change.action is Action.DELETE and change.state.retain_on_delete:
        return False  # kept in AWS
    states = [s for s in (change.old, change.new) if s is not None]
    if not any(s.protect for s in states):
        return False
    state = change.state
    return state.type in DATA_LOST and (state.type != VOLUME or state.role == "head")


def storage_problems(plan: ChangePlan, accepted: set[str]) -> list[str]:
    problems = []
    for planned in plan.changes:
        if not _guarded_storage(planned) or planned.change.state.name in accepted:
            continue
        state = planned.change.state
        verb = "replace" if planned.change.action is Action.REPLACE else "delete"
        why = next((p.replaces for p in planned.change.properties if p.replaces), None)
        because = f" ({why})" if why else ""
        problems.append(
            f"storage: this `pulumi up` would {verb} {state.name}{because}, which storage.protect "
            f"covers: {DATA_LOST[state.type]} would be lost. Nothing was changed. To keep it, "
            "undo the change (`slurmstack plan NEW --against OLD` shows what forces it). To "
            f"{verb} it on purpose: copy what you need first, then run `pulumi config set "
            f"--path 'slurmstack:{ACCEPT_KEY}[0]' {state.name}`, set storage.protect: false "
            f"for this one deploy (or `pulumi state unprotect '{state.urn}'`), and run `pulumi "
            "up` again."
        )
    return problems


def rolled_groups(plan: ChangePlan) -> list[str]:
    """Physical names of the groups whose launch template this change touches."""
    names = []
    for planned in plan.changes:
        change = planned.change
        if change.state.type != GROUP or change.action is not Action.UPDATE:
            continue
        if change.changed & GROUP_TEMPLATE:
            names.append(str(change.state.inputs.get("name")))
    return sorted(names)


def refresh_problems(plan: ChangePlan, refreshes: dict[str, Refresh]) -> list[str]:
    problems = []
    for group in rolled_groups(plan):
        refresh = refreshes.get(group)
        if refresh is None or not refresh.running:
            continue
        progress = (
            f"{refresh.percentage_complete}% done"
            if refresh.percentage_complete is not None
            else "progress unknown"
        )
        if refresh.instances_to_update is not None:
            progress += f", {refresh.instances_to_update} instances still to replace"
        problems.append(
            f"pools: this `pulumi up` changes the launch template of {group}, whose instance "
            f"refresh is {refresh.status} ({progress}, started {refresh.start_time or '?'}). The "
            "provider would cancel it and could give up before the cancel ends, leaving the pool "
            "half rolled. Nothing was changed. Wait for it to finish (`aws autoscaling "
            f"describe-instance-refreshes --auto-scaling-group-name {group}`), or cancel it on "
            f"purpose (`aws autoscaling cancel-instance-refresh --auto-scaling-group-name {group}`) "
            "and wait for the cancel to end, then run `pulumi up` again."
        )
    return problems
