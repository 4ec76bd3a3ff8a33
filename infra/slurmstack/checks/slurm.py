"""Slurm: the default partition and the user's extra slurm.conf settings."""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, suggestion, warning
from slurmstack.findings import Finding
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
        "SlurmdTimeout",
        "MessageTimeout",
        "UnkillableStepTimeout",
        "BatchStartTimeout",
        # health and repair: the node's checks (docs/when-nodes-fail.md), the reboots the
        # controller asks for and how long they may take, jobs requeued off failed nodes.
        "HealthCheckProgram",
        "HealthCheckInterval",
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

# The global slurm.conf keys of Slurm 23.11, the version Ubuntu 24.04 nodes run: the
# slurm_conf_options[] table of src/common/read_config.c at tag slurm-23-11-4-1 (identical in
# every 23.11.x), without the keys that table marks defunct and FastSchedule, plus Include (a directive the
# parser reads itself). See slurm.conf(5) of that release. slurmctld refuses a slurm.conf
# holding a key outside its table ("Parsing error at unrecognized key", parse_config.c).
_KEYS_23_11 = (
    "AccountingStorageBackupHost AccountingStorageEnforce AccountingStorageExternalHost "
    "AccountingStorageHost AccountingStorageLoc AccountingStorageParameters "
    "AccountingStoragePass AccountingStoragePort AccountingStorageTRES AccountingStorageType "
    "AccountingStorageUser AccountingStoreFlags AccountingStoreJobComment "
    "AcctGatherEnergyType AcctGatherFilesystemType AcctGatherInfinibandType "
    "AcctGatherInterconnectType AcctGatherNodeFreq AcctGatherProfileType "
    "AllowSpecResourcesUsage AuthAltParameters AuthAltTypes AuthInfo AuthType BackupAddr "
    "BackupController BatchStartTimeout BcastExclude BcastParameters BurstBufferParameters "
    "BurstBufferType CliFilterPlugins ClusterName CommunicationParameters CompleteWait "
    "ControlAddr ControlMachine CoreSpecPlugin CpuFreqDef CpuFreqGovernors CredType "
    "CryptoType DebugFlags DefCPUPerGPU DefMemPerCPU DefMemPerGPU DefMemPerNode "
    "DependencyParameters DisableRootJobs DownNodes EioTimeout EnforcePartLimits Epilog "
    "EpilogMsgTime EpilogSlurmctld FairShareDampeningFactor "
    "FederationParameters FirstJobId FrontendName GetEnvTimeout GpuFreqDef GresTypes "
    "GroupUpdateForce GroupUpdateTime HealthCheckInterval HealthCheckNodeState "
    "HealthCheckProgram InactiveLimit InteractiveStepOptions JobAcctGatherFrequency "
    "JobAcctGatherParams JobAcctGatherType JobCompHost JobCompLoc JobCompParams JobCompPass "
    "JobCompPort JobCompType JobCompUser JobContainerType JobFileAppend JobRequeue "
    "JobSubmitPlugins KeepAliveTime KillOnBadExit KillWait LaunchParameters LaunchType "
    "Licenses LogTimeFormat MailDomain MailProg MaxArraySize MaxBatchRequeue MaxDBDMsgs "
    "MaxJobCount MaxJobId MaxMemPerCPU MaxMemPerNode MaxNodeCount MaxStepCount "
    "MaxTasksPerNode MCSParameters MCSPlugin MessageTimeout MinJobAge MpiDefault MpiParams "
    "NodeFeaturesPlugins NodeName NodeSet OverTimeLimit PartitionName PluginDir "
    "PlugStackConfig PowerParameters PowerPlugin PreemptExemptTime PreemptMode "
    "PreemptParameters PreemptType PrEpParameters PrEpPlugins PriorityCalcPeriod "
    "PriorityDecayHalfLife PriorityFavorSmall PriorityFlags PriorityMaxAge "
    "PriorityParameters PrioritySiteFactorParameters PrioritySiteFactorPlugin PriorityType "
    "PriorityUsageResetPeriod PriorityWeightAge PriorityWeightAssoc PriorityWeightFairshare "
    "PriorityWeightJobSize PriorityWeightPartition PriorityWeightQOS PriorityWeightTRES "
    "PrivateData ProctrackType Prolog PrologEpilogTimeout PrologFlags PrologSlurmctld "
    "PropagatePrioProcess PropagateResourceLimits PropagateResourceLimitsExcept "
    "RebootProgram ReconfigFlags RequeueExit RequeueExitHold ResumeFailProgram ResumeProgram "
    "ResumeRate ResumeTimeout ResvEpilog ResvOverRun ResvProlog ReturnToService RoutePlugin "
    "SallocDefaultCommand SbcastParameters SchedulerParameters SchedulerTimeSlice "
    "SchedulerType ScronParameters SelectType SelectTypeParameters SlurmctldAddr "
    "SlurmctldDebug SlurmctldHost SlurmctldLogFile SlurmctldParameters SlurmctldPidFile "
    "SlurmctldPort SlurmctldPrimaryOffProg SlurmctldPrimaryOnProg SlurmctldSyslogDebug "
    "SlurmctldTimeout SlurmdDebug SlurmdLogFile SlurmdParameters SlurmdPidFile SlurmdPort "
    "SlurmdSpoolDir SlurmdSyslogDebug SlurmdTimeout SlurmdUser SlurmSchedLogFile "
    "SlurmSchedLogLevel SlurmUser SrunEpilog SrunPortRange SrunProlog StateSaveLocation "
    "SuspendExcNodes SuspendExcParts SuspendExcStates SuspendProgram SuspendRate SuspendTime "
    "SuspendTimeout SwitchParameters SwitchType TaskEpilog TaskPlugin TaskPluginParam "
    "TaskProlog TCPTimeout TmpFS TopologyParam TopologyPlugin TrackWCKey TreeWidth "
    "UnkillableStepProgram UnkillableStepTimeout UsePAM VSizeFactor WaitTime X11Parameters"
)
KNOWN_SLURM_KEYS = (*_KEYS_23_11.split(), "Include")
SLURM_VERSION = "23.11"

# Keys Slurm dropped before 23.11, with the release that dropped them (the same table at the
# first tag of each release from 17.11 on; "defunct": still parsed, logged as an error, unused).
# FastSchedule is still parsed by 23.11 only to stop on it (read_config.c: "The FastSchedule
# option has been removed"; its FastSchedule=2 is SlurmdParameters=config_overrides now).
REMOVED_KEYS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("ChosLoc", "Layouts", "MsgAggregationParams"), ("20.11", "removed")),
    **dict.fromkeys(
        (
            "CacheGroups",
            "CheckpointType",
            "DefaultStorageHost",
            "DefaultStorageLoc",
            "DefaultStoragePass",
            "DefaultStoragePort",
            "DefaultStorageType",
            "DefaultStorageUser",
            "JobCheckpointDir",
            "MemLimitEnforce",
            "SchedulerPort",
            "SchedulerRootFilter",
        ),
        ("21.08", "removed"),
    ),
    "FastSchedule": ("20.02", "removed"),
    "SchedulerAuth": ("22.05", "defunct"),
    "SlurmctldPlugstack": ("23.02", "removed"),
    **dict.fromkeys(
        (
            "ExtSensorsFreq",
            "ExtSensorsType",
            "JobCredentialPrivateKey",
            "JobCredentialPublicCertificate",
        ),
        ("23.11", "defunct"),
    ),
}

# Keys that appear only after 23.11, with the first release that has them.
NEWER_KEYS: dict[str, str] = {
    **dict.fromkeys(("HashPlugin", "TLSParameters", "TLSType"), "24.05"),
    **dict.fromkeys(("CertmgrParameters", "CertmgrType", "DataParserParameters"), "24.11"),
    **dict.fromkeys(
        ("CertgenParameters", "CertgenType", "EpilogTimeout", "PrologTimeout"), "25.05"
    ),
    **dict.fromkeys(
        (
            "CliFilterParameters",
            "HttpParserType",
            "JobCompPassScript",
            "MetricsType",
            "NamespaceType",
            "UrlParserType",
        ),
        "25.11",
    ),
}

# Keys 23.11 takes that a later release dropped or made defunct (the first such release).
DROPPED_AFTER_KEYS: dict[str, str] = {
    **dict.fromkeys(("CoreSpecPlugin", "PowerParameters", "PowerPlugin"), "24.05"),
    **dict.fromkeys(("FrontendName", "GetEnvTimeout"), "25.05"),
    **dict.fromkeys(("AccountingStorageLoc", "AccountingStorageUser"), "25.11"),
}

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


def _by_folded(keys: dict[str, str] | dict[str, tuple[str, str]]) -> dict[str, str]:
    return {key.lower(): key for key in keys}


# why: slurmctld refuses an unknown key; an unknown key is most likely a misspelt one.
@rule
def slurm_setting_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    known = {k.lower() for k in KNOWN_SLURM_KEYS}
    elsewhere = {*_by_folded(REMOVED_KEYS), *_by_folded(NEWER_KEYS)}
    for key in spec.slurm.settings:
        folded = key.lower()
        if SLURM_KEY.match(key) and folded not in known and folded not in elsewhere:
            yield error(
                f"slurm.settings.{key}",
                f"{key} is not a slurm.conf parameter of Slurm {SLURM_VERSION}, the Slurm the "
                f"nodes run{suggestion(key, list(KNOWN_SLURM_KEYS), catalog)}; slurmctld "
                "refuses unknown keys",
            )


# why: the nodes run Slurm 23.11: a key Slurm dropped before it, or added after it, stops
# slurmctld ("unrecognized key") or is ignored with an error in its log.
@rule
def slurm_setting_version(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    removed, newer = _by_folded(REMOVED_KEYS), _by_folded(NEWER_KEYS)
    for key in spec.slurm.settings:
        folded = key.lower()
        if folded in removed:
            name = removed[folded]
            version, how = REMOVED_KEYS[name]
            effect = (
                "slurmctld refuses it"
                if how == "removed"
                else "slurmctld logs an error and ignores it"
            )
            yield error(
                f"slurm.settings.{key}",
                f"{name} was {how} in Slurm {version}; the nodes run Slurm {SLURM_VERSION}, "
                f"where {effect}: remove it",
            )
        elif folded in newer:
            name = newer[folded]
            yield error(
                f"slurm.settings.{key}",
                f"{name} first appears in Slurm {NEWER_KEYS[name]}; the nodes run Slurm "
                f"{SLURM_VERSION}, whose slurmctld refuses it as an unknown key: remove it",
            )


# why: a key 23.11 takes but a later Slurm dropped breaks the cluster when the nodes move on.
@rule
def slurm_setting_dropped_later(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    dropped = _by_folded(DROPPED_AFTER_KEYS)
    for key in spec.slurm.settings:
        name = dropped.get(key.lower())
        if name is not None:
            yield warning(
                f"slurm.settings.{key}",
                f"{name} works on Slurm {SLURM_VERSION} but Slurm {DROPPED_AFTER_KEYS[name]} "
                "dropped it; plan to remove it before the nodes move to a newer Slurm",
            )


# why: power saving is slurmstack's, through pools[].max_count: a key of the user's would fight
# the elastic nodes' programs and timeouts, or power down always-on nodes (POWER_SAVING_REASON).
@rule
def slurm_setting_unprovisioned(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key in spec.slurm.settings:
        folded = key.lower()
        if folded in POWER_SAVING_KEYS:
            yield error(f"slurm.settings.{key}", f"{key} is refused: {POWER_SAVING_REASON}")


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
