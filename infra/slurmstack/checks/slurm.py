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
        "SlurmdTimeout",
        "MessageTimeout",
        "UnkillableStepTimeout",
        "BatchStartTimeout",
        "NodeName",
        "NodeSet",
        "PartitionName",
        "DownNodes",
        "FrontendName",
        "Include",
    )
)

# Global slurm.conf parameters: the s_p_options table of Slurm's src/common/read_config.c
# (21.08), plus HashPlugin and SuspendExcStates from Slurm 23.02. slurmctld refuses a
# slurm.conf with a key it does not know, so an unknown key is most likely a typo; the rule
# warns rather than refuses because this list may lag behind the Slurm the nodes run.
_KNOWN_KEYS_TEXT = (
    "AccountingStorageTRES AccountingStorageEnforce AccountingStorageExternalHost "
    "AccountingStorageHost AccountingStorageBackupHost AccountingStorageLoc "
    "AccountingStorageParameters AccountingStoragePass AccountingStoragePort "
    "AccountingStorageType AccountingStorageUser AccountingStoreFlags AccountingStoreJobComment "
    "AcctGatherEnergyType AcctGatherNodeFreq AcctGatherProfileType AcctGatherInterconnectType "
    "AcctGatherInfinibandType AcctGatherFilesystemType AllowSpecResourcesUsage AuthAltTypes "
    "AuthAltParameters AuthInfo AuthType BackupAddr BackupController BatchStartTimeout "
    "BcastExclude BcastParameters BurstBufferParameters BurstBufferType CoreSpecPlugin "
    "CliFilterPlugins ClusterName CommunicationParameters CompleteWait ControlAddr "
    "ControlMachine CpuFreqDef CpuFreqGovernors CredType CryptoType DebugFlags DefCPUPerGPU "
    "DefMemPerCPU DefMemPerGPU DefMemPerNode DependencyParameters DisableRootJobs EioTimeout "
    "EnforcePartLimits Epilog EpilogMsgTime EpilogSlurmctld ExtSensorsType ExtSensorsFreq "
    "FairShareDampeningFactor FederationParameters FirstJobId GetEnvTimeout GresTypes "
    "GroupUpdateForce GroupUpdateTime GpuFreqDef HashPlugin HealthCheckInterval "
    "HealthCheckNodeState HealthCheckProgram InteractiveStepOptions InactiveLimit "
    "JobAcctGatherType JobAcctGatherFrequency JobAcctGatherParams JobCompHost JobCompLoc "
    "JobCompParams JobCompPass JobCompPort JobCompType JobContainerType JobCompUser "
    "JobCredentialPrivateKey JobCredentialPublicCertificate JobFileAppend JobRequeue "
    "JobSubmitPlugins KeepAliveTime KillOnBadExit KillWait LaunchParameters LaunchType Licenses "
    "LogTimeFormat MailDomain MailProg MaxArraySize MaxDBDMsgs MaxJobCount MaxNodeCount "
    "MaxJobId MaxMemPerCPU MaxMemPerNode MaxStepCount MaxTasksPerNode MCSParameters MCSPlugin "
    "MessageTimeout MinJobAge MpiDefault MpiParams NodeFeaturesPlugins OverTimeLimit PluginDir "
    "PlugStackConfig PowerParameters PowerPlugin PreemptMode PreemptType PreemptExemptTime "
    "PrEpParameters PrEpPlugins PriorityDecayHalfLife PriorityCalcPeriod PriorityFavorSmall "
    "PriorityMaxAge PriorityParameters PriorityUsageResetPeriod PriorityType PriorityFlags "
    "PrioritySiteFactorParameters PrioritySiteFactorPlugin PriorityWeightAge "
    "PriorityWeightAssoc PriorityWeightFairshare PriorityWeightJobSize PriorityWeightPartition "
    "PriorityWeightQOS PriorityWeightTRES PrivateData ProctrackType Prolog PrologSlurmctld "
    "PrologEpilogTimeout PrologFlags PropagatePrioProcess PropagateResourceLimitsExcept "
    "PropagateResourceLimits RebootProgram ReconfigFlags RequeueExit RequeueExitHold "
    "ResumeFailProgram ResumeProgram ResumeRate ResumeTimeout ResvEpilog ResvOverRun ResvProlog "
    "ReturnToService RoutePlugin SbcastParameters SchedulerParameters SchedulerTimeSlice "
    "SchedulerType ScronParameters SelectType SelectTypeParameters SlurmUser SlurmdUser "
    "SlurmctldAddr SlurmctldDebug SlurmctldLogFile SlurmctldPidFile SlurmctldPlugstack "
    "SlurmctldPort SlurmctldPrimaryOffProg SlurmctldPrimaryOnProg SlurmctldSyslogDebug "
    "SlurmctldTimeout SlurmctldParameters SlurmdDebug SlurmdLogFile SlurmdParameters "
    "SlurmdPidFile SlurmdPort SlurmdSpoolDir SlurmdSyslogDebug SlurmdTimeout SlurmSchedLogFile "
    "SlurmSchedLogLevel SrunEpilog SrunProlog SrunPortRange StateSaveLocation SuspendExcNodes "
    "SuspendExcParts SuspendExcStates SuspendProgram SuspendRate SuspendTime SuspendTimeout "
    "SwitchParameters SwitchType TaskEpilog TaskProlog TaskPlugin TaskPluginParam TCPTimeout "
    "TmpFS TopologyParam TopologyPlugin TrackWCKey TreeWidth UnkillableStepProgram "
    "UnkillableStepTimeout UsePAM VSizeFactor WaitTime X11Parameters DownNodes FrontendName "
    "NodeName NodeSet PartitionName SlurmctldHost Include"
)
KNOWN_SLURM_KEYS = tuple(_KNOWN_KEYS_TEXT.split())

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


# why: slurmctld refuses an unknown key; an unknown key is most likely a misspelt one.
@rule
def slurm_setting_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    known = {k.lower() for k in KNOWN_SLURM_KEYS}
    for key in spec.slurm.settings:
        if SLURM_KEY.match(key) and key.lower() not in known:
            yield warning(
                f"slurm.settings.{key}",
                f"{key} is not a slurm.conf parameter Slurm 23.11 knows"
                f"{suggestion(key, list(KNOWN_SLURM_KEYS), catalog)}; slurmctld refuses "
                "unknown keys",
            )


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
