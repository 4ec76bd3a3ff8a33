"""Slurm: the default partition and the user's extra slurm.conf settings."""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, suggestion, warning
from slurmstack.checks.slurm_keys import KEY_HISTORY
from slurmstack.checks.slurm_keys import LINES as SLURM_KEY_LINES
from slurmstack.findings import Finding
from slurmstack.slurm_releases import (
    as_of,
    controller_accepts,
    line_of,
    lines,
    source,
    sources,
    supported,
    upgrade_hops,
    version_of_record,
)
from slurmstack.spec import ClusterSpec

# The slurm.conf keys slurmstack writes itself (lowercase: Slurm matches keys without regard
# to case). The slurm.conf template imports this set, so the keys it renders and the keys
# users may not override stay one list: add a key here when the template starts to set it.
#  - identity and daemons: who runs what, where, on which ports, with which state and logs;
#  - configless dynamic nodes: SlurmctldParameters=enable_configless, MaxNodeCount, TreeWidth,
#    ReturnToService, and the NodeSet/PartitionName/NodeName lines derived from the pools;
#  - resource model: SelectType(Parameters), GresTypes, ProctrackType, TaskPlugin must match
#    the GRES and cgroup setup the nodes are booted with; SchedulerType and MpiDefault (pmix)
#    are what the partitions and srun launch lines are written for;
#  - EFA and jobs: PropagateResourceLimitsExcept=MEMLOCK keeps the locked-memory limit EFA
#    needs, TaskProlog exports the rendered NCCL environment, SrunPortRange matches the
#    security group;
#  - cloud timing: SlurmdTimeout, MessageTimeout, UnkillableStepTimeout and BatchStartTimeout
#    are sized for nodes that boot from an image and mount Lustre;
#  - Include would pull in a file that bypasses these checks.
MANAGED_SLURM_KEYS = frozenset(
    key.lower()
    for key in (
        "ClusterName",
        "SlurmctldHost",
        "ControlMachine",
        "ControlAddr",
        "BackupController",
        "BackupAddr",
        # head_node.backup's takeover time (slurmstack.plan.head.BACKUP_SLURMCTLD_TIMEOUT_SECONDS).
        "SlurmctldTimeout",
        "SlurmUser",
        "SlurmdUser",
        "AuthType",
        "CredType",
        "SlurmctldPort",
        "SlurmdPort",
        "StateSaveLocation",
        "SlurmdSpoolDir",
        "SlurmctldPidFile",
        "SlurmdPidFile",
        "SlurmctldLogFile",
        "SlurmdLogFile",
        "SlurmctldParameters",
        "SrunPortRange",
        "MaxNodeCount",
        "TreeWidth",
        "ReturnToService",
        "GresTypes",
        "SelectType",
        "SelectTypeParameters",
        "ProctrackType",
        "TaskPlugin",
        "SchedulerType",
        "MpiDefault",
        "PropagateResourceLimitsExcept",
        "TaskProlog",
        "Prolog",
        "Epilog",
        "PrologFlags",
        # Slurm's own metrics, which the head's Prometheus scrapes (plan.observability).
        "MetricsType",
        "SlurmdTimeout",
        "MessageTimeout",
        "UnkillableStepTimeout",
        "BatchStartTimeout",
        # health and repair: the node's checks (docs/when-nodes-fail.md), the reboots the
        # controller asks for and how long they may take, jobs requeued off failed nodes.
        "HealthCheckProgram",
        "HealthCheckInterval",
        "HealthCheckTimeout",
        "HealthCheckNodeState",
        "RebootProgram",
        "ResumeTimeout",
        "JobRequeue",
        "NodeName",
        "NodeSet",
        "PartitionName",
        "DownNodes",
        "FrontendName",
        "Include",
    )
)

# Which global slurm.conf keys each Slurm release line takes: checks/slurm_keys.py, generated from
# read_config.c's table at each line's first tag (.ci/slurm-conf-keys). slurmctld refuses a
# slurm.conf holding a key outside its table ("Parsing error at unrecognized key",
# parse_config.c). Include is a directive the parser reads itself.
DIRECTIVES = ("Include",)
# FastSchedule stays in the table only so that read_config.c can stop on it ("The FastSchedule
# option has been removed"; FastSchedule=2 is SlurmdParameters=config_overrides now).
STOPS_ON = {"FastSchedule": "20.02"}


def _line_key(line: str) -> tuple[int, int]:
    year, month = line.split(".")
    return int(year), int(month)


def key_state(key: str, line: str) -> tuple[str, str | None]:
    """(state, release) of a slurm.conf key on a release line: ("live", None), ("newer",
    first line), ("removed"|"defunct", line that dropped it) or ("unknown", None)."""
    name = canonical_key(key)
    if name is None:
        return "unknown", None
    if name in DIRECTIVES:
        return "live", None
    if name in STOPS_ON:
        return "removed", STOPS_ON[name]
    first, gone, how = KEY_HISTORY[name]
    if first is None:
        return "defunct", SLURM_KEY_LINES[0]
    if _line_key(line) < _line_key(first):
        return "newer", first
    if gone is not None and how is not None and _line_key(line) >= _line_key(gone):
        return how, gone
    return "live", None


def canonical_key(key: str) -> str | None:
    """The key as Slurm's table spells it (Slurm matches keys without regard to case)."""
    return _CANONICAL.get(key.lower())


def known_keys(line: str) -> tuple[str, ...]:
    """Every key ``line`` takes, as its table spells them."""
    keys = [k for k in KEY_HISTORY if key_state(k, line)[0] == "live"]
    return (*keys, *DIRECTIVES)


def dropped_after(key: str, line: str) -> str | None:
    """The first later line that no longer takes a key ``line`` takes (None: none known)."""
    name = canonical_key(key)
    if name is None or name not in KEY_HISTORY or key_state(name, line)[0] != "live":
        return None
    gone = KEY_HISTORY[name][1]
    return gone if gone is not None and _line_key(gone) > _line_key(line) else None


_CANONICAL = {k.lower(): k for k in (*KEY_HISTORY, *DIRECTIVES)}


# Keys slurm.accounting derives (slurmstack.plan.accounting and the slurm.conf template write
# them): every accounting-storage key (slurmdbd's host, port, TRES, enforcement), how job usage
# is gathered, and the priority plugin with the fair-share and QoS weights. The other priority
# weights and factors (age, job size, partition, decay) stay the user's, in slurm.settings.
ACCOUNTING_PREFIX = "accountingstorage"
ACCOUNTING_KEYS = frozenset(
    key.lower()
    for key in ("JobAcctGatherType", "PriorityType", "PriorityWeightFairshare", "PriorityWeightQOS")
)
ACCOUNTING_REASON = (
    "managed by slurm.accounting (slurmstack runs slurmdbd and derives the accounting and "
    "fair-share keys from it); set slurm.accounting instead"
)


def is_accounting_key(key: str) -> bool:
    folded = key.lower()
    return folded.startswith(ACCOUNTING_PREFIX) or folded in ACCOUNTING_KEYS


# Power saving: managed through the pools (max_count, scale_down_idle_minutes).
POWER_SAVING_KEYS = frozenset(
    key.lower()
    for key in (
        "ResumeProgram",
        "ResumeFailProgram",
        "ResumeRate",
        "SuspendProgram",
        "SuspendRate",
        "SuspendTime",
        "SuspendTimeout",
        "SuspendExcNodes",
        "SuspendExcParts",
        "SuspendExcStates",
    )
)
POWER_SAVING_REASON = (
    "Slurm's power saving is managed by pools[].max_count: slurmstack sets ResumeProgram, "
    "SuspendProgram, ResumeFailProgram and the timeouts for the elastic nodes, and each pool's "
    "SuspendTime from its scale_down_idle_minutes; set those instead (a global SuspendTime "
    "would power down the always-on nodes, which nothing brings back)"
)

# Network topology: Slurm's topology must place every node (a node no switch reaches is left
# out of multi-node jobs, and a plugin with no topology file fails them: HyperPod's 2026
# incident), which only the head can keep as nodes come and go, from EC2's instance topology
# (slurmstack.node.controller.topology).
TOPOLOGY_KEYS = frozenset(key.lower() for key in ("TopologyPlugin", "TopologyParam"))
TOPOLOGY_REASON = (
    "Slurm's network topology must name every node as nodes join and leave, which slurmstack's "
    "head keeps from EC2's instance topology; a plugin set here without that fails or narrows "
    "multi-node jobs"
)

# slurm.conf keys are words of letters and digits.
SLURM_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


# why: a default partition that names no pool makes slurmctld refuse the partition line.
@rule
def default_partition_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    name = spec.slurm.default_partition
    pools = [pool.name for pool in spec.pools]
    if name is not None and name not in pools:
        yield error(
            "slurm.default_partition",
            f"default partition {name!r} is not a pool{suggestion(name, pools, catalog)}; "
            f"partitions are the pool names: {', '.join(pools)}",
        )


# why: overriding a key slurmstack writes breaks configless nodes, GRES or the head node.
@rule
def slurm_setting_managed(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key in spec.slurm.settings:
        if key.lower() in MANAGED_SLURM_KEYS:
            yield error(
                f"slurm.settings.{key}",
                f"{key} is managed by slurmstack (it is derived from the definition); remove "
                "it from slurm.settings",
            )
        elif is_accounting_key(key):
            yield error(f"slurm.settings.{key}", f"{key} is {ACCOUNTING_REASON}")


# why: Slurm reads keys case-insensitively, so 'maxjobcount' and 'MaxJobCount' collide.
@rule
def slurm_setting_duplicate(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    seen: dict[str, str] = {}
    for key in spec.slurm.settings:
        folded = key.lower()
        if folded in seen:
            yield error(
                f"slurm.settings.{key}",
                f"{key} repeats {seen[folded]} (Slurm keys ignore case); keep one of them",
            )
        else:
            seen[folded] = key


# why: a key that is not a single word would be written as a broken slurm.conf line.
@rule
def slurm_setting_key(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key in spec.slurm.settings:
        if not SLURM_KEY.match(key):
            yield error(
                f"slurm.settings.{key}",
                f"{key!r} is not a slurm.conf key (letters and digits, starting with a letter)",
            )


def _line(spec: ClusterSpec) -> str:
    """The release line slurm.conf is written for: the oldest any daemon runs (every slurmd
    reads the whole file and refuses keys its release does not know)."""
    versions = [spec.slurm.version, *(p.slurm_version or spec.slurm.version for p in spec.pools)]
    return line_of(min(versions, key=lambda v: tuple(int(x) for x in v.split("."))))


# why: slurmctld refuses an unknown key; an unknown key is most likely a misspelt one.
@rule
def slurm_setting_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    line = _line(spec)
    for key in spec.slurm.settings:
        if SLURM_KEY.match(key) and key_state(key, line)[0] == "unknown":
            known = list(known_keys(line))
            yield error(
                f"slurm.settings.{key}",
                f"{key} is not a slurm.conf parameter of Slurm {line}, the Slurm the nodes run "
                f"(slurm.version){suggestion(key, known, catalog)}; slurmctld refuses unknown keys",
            )


# why: a key Slurm dropped before the nodes' release line, or added after it, stops slurmctld
# ("unrecognized key") or is ignored with an error in its log.
@rule
def slurm_setting_version(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    line = _line(spec)
    for key in spec.slurm.settings:
        state, release = key_state(key, line)
        name = canonical_key(key)
        if state in ("removed", "defunct"):
            effect = (
                "slurmctld refuses it"
                if state == "removed"
                else "slurmctld logs an error and ignores it"
            )
            yield error(
                f"slurm.settings.{key}",
                f"{name} was {state} in Slurm {release}; the nodes run Slurm {line} "
                f"(slurm.version), where {effect}: remove it",
            )
        elif state == "newer":
            yield error(
                f"slurm.settings.{key}",
                f"{name} first appears in Slurm {release}; the nodes run Slurm {line} "
                "(slurm.version), whose slurmctld refuses it as an unknown key: remove it or "
                f"choose a Slurm of {release} or later",
            )


# why: a key the nodes' line takes but a later Slurm dropped breaks the cluster on upgrade.
@rule
def slurm_setting_dropped_later(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    line = _line(spec)
    for key in spec.slurm.settings:
        gone = dropped_after(key, line)
        if gone is not None:
            yield warning(
                f"slurm.settings.{key}",
                f"{canonical_key(key)} works on Slurm {line} but Slurm {gone} dropped it; "
                "remove it before the nodes move to a newer Slurm",
            )


# why: power saving is slurmstack's, through pools[].max_count: a key of the user's would fight
# the elastic nodes' programs and timeouts, or power down always-on nodes (POWER_SAVING_REASON);
# the network topology is the head's to keep (TOPOLOGY_REASON).
@rule
def slurm_setting_unprovisioned(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key in spec.slurm.settings:
        folded = key.lower()
        if folded in POWER_SAVING_KEYS:
            yield error(f"slurm.settings.{key}", f"{key} is refused: {POWER_SAVING_REASON}")
        elif folded in TOPOLOGY_KEYS:
            yield error(f"slurm.settings.{key}", f"{key} is refused: {TOPOLOGY_REASON}")


# why: a newline would inject extra slurm.conf lines; '#' starts a comment and cuts the value.
@rule
def slurm_setting_value(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key, value in spec.slurm.settings.items():
        if not isinstance(value, str):
            continue
        if any(c in value for c in "\n\r\x00"):
            yield error(
                f"slurm.settings.{key}",
                f"the value of {key} contains a line break; slurm.conf values are one line",
            )
        elif "#" in value:
            yield error(
                f"slurm.settings.{key}",
                f"the value of {key} contains '#', which starts a slurm.conf comment and cuts "
                "the value; escape it as '\\#'",
            )


# why: YAML reads yes/no/true/false as booleans, but Slurm takes YES/NO or a number, not True.
@rule
def slurm_setting_bool(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key, value in spec.slurm.settings.items():
        if isinstance(value, bool):
            yield error(
                f"slurm.settings.{key}",
                f"{key} is the boolean {value} (YAML reads yes/no/true/false so); Slurm wants "
                'the literal text: quote it, e.g. "YES", "NO" or "1"',
            )


# why: the image builds Slurm from a source whose sha256 slurmstack recorded; another version
# has no verified source to build from.
@rule
def slurm_version_pinned(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    version = spec.slurm.version
    if source(version) is None:
        pinned = sorted(sources(), key=lambda v: tuple(int(p) for p in v.split(".")))
        yield error(
            "slurm.version",
            f"Slurm {version} has no pinned source (image_pins.json records the tarball and "
            f"sha256 of {', '.join(pinned)}); choose one of them, or record {version}'s source "
            "first (docs/slurm-versions.md, 'Taking a patch release')",
        )


# why: SchedMD fixes security problems only in supported release lines.
@rule
def slurm_version_supported(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    line = line_of(spec.slurm.version)
    row = lines().get(line)
    if source(spec.slurm.version) is not None and row is not None and not supported(line):
        yield warning(
            "slurm.version",
            f"SchedMD's support of Slurm {line} ended in {row.end_of_support} (its upgrade "
            f"guide, as of {as_of()}): no more security fixes; move to {version_of_record()}, "
            "the version of record",
        )


# why: slurmd must never run a newer Slurm than slurmctld (SchedMD, "Upgrade Procedure":
# slurmdbd, then slurmctld, then slurmd), and slurmctld takes slurmd of its compatibility
# window only: a pool ahead of the head, or too far behind it, has nodes that never register.
@rule
def slurm_version_order(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    head = spec.slurm.version
    for index, pool in enumerate(spec.pools):
        version = pool.slurm_version
        if version is None or version == head:
            continue
        path = f"pools[{index}].slurm_version"
        if source(version) is None:
            pinned = ", ".join(sorted(sources(), key=_version_key))
            yield error(
                path,
                f"Slurm {version} has no pinned source (image_pins.json pins {pinned}); choose "
                "one of them, or leave it out so the pool runs slurm.version",
            )
        elif _version_key(version) > _version_key(head):
            yield error(
                path,
                f"{version} is newer than slurm.version {head}, the Slurm of the head's slurmctld "
                "and slurmdbd: slurmd must never run ahead of slurmctld (Slurm upgrades "
                f"slurmdbd, then slurmctld, then slurmd). Upgrade the head first: set "
                f"slurm.version to {version} and deploy (the head is replaced before any pool "
                f"rolls), then leave pools[{index}].slurm_version out",
            )
        elif not controller_accepts(head, version):
            row = lines().get(line_of(head))
            window = ", ".join(row.compatible_prior) if row else "none known"
            yield error(
                path,
                f"slurmctld {head} takes slurmd of {line_of(head)} and {window} only (its "
                f"upgrade guide's compatibility window); {version} nodes would never register: "
                f"choose a release of {line_of(head)} or {window}, or leave it out so the pool "
                "runs slurm.version",
            )


# why: slurm.upgrade_from keeps slurm.conf readable by the release the nodes ran before the
# change; it must be a release this cluster can come from (not newer, within the window).
@rule
def slurm_upgrade_from(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    before = spec.slurm.upgrade_from
    if before is None:
        return
    path = "slurm.upgrade_from"
    if before == spec.slurm.version:
        yield warning(path, f"the same as slurm.version ({before}): nothing to keep; remove it")
        return
    if _version_key(before) > _version_key(spec.slurm.version):
        yield error(
            path,
            f"{before} is newer than slurm.version {spec.slurm.version}: upgrade_from is the "
            "release the nodes ran before this upgrade; set that release, or remove it",
        )
        return
    for finding in slurm_upgrade_findings(before, spec.slurm.version):
        yield error(path, finding.message)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def slurm_upgrade_findings(old_version: str, new_version: str) -> list[Finding]:
    """What a change of slurm.version from ``old_version`` (what the cluster runs) to
    ``new_version`` is refused for: a downgrade (Slurm's daemons convert their state and the
    database on start; upgrades.shtml, "Reverting an Upgrade"), or a jump past Slurm's
    compatibility window, which names the release to go through first."""
    if old_version == new_version:
        return []
    if _version_key(new_version) < _version_key(old_version):
        return [
            error(
                "slurm.version",
                f"{new_version} is older than the Slurm the cluster runs ({old_version}); Slurm "
                "cannot go back once its daemons converted their state and database: keep "
                f"{old_version} or choose a newer release",
            )
        ]
    hops = upgrade_hops(old_version, new_version)
    if hops is None:
        return [
            error(
                "slurm.version",
                f"no upgrade path from Slurm {old_version} to {new_version} is known (Slurm's "
                "upgrade guide lists neither line); choose a pinned release",
            )
        ]
    if len(hops) > 1:
        target = lines()[line_of(new_version)]
        through = [hop for hop in hops[:-1]]
        pinned = [v for v in sources() if line_of(v) == through[0]]
        choose = (
            f"Slurm {pinned[0]}" if pinned else f"a {through[0]} release (pin its source first)"
        )
        return [
            error(
                "slurm.version",
                f"Slurm {new_version} accepts the state of {', '.join(target.compatible_prior)} "
                f"only (its upgrade guide's compatibility window); the cluster runs "
                f"{old_version}: upgrade through {' then '.join(through)} first: set "
                f"slurm.version to {choose}, deploy and let the rollout finish, then to "
                f"{new_version}",
            )
        ]
    return []
