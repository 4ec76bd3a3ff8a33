"""Time to ready: the longest chain of dependent steps from `pulumi up` to a cluster whose
nodes have joined Slurm.

Each resource takes a typical creation time by its type (below, each with its basis), and
starts when everything it depends on has been created. Two boot steps follow the
resources: the head node's bootstrap (slurmctld up) and each pool's node boot (health
check, mounts, slurmd registered). Nodes read deploy-time values (head address, file
system names) from SSM parameters at boot, so a node's boot also waits for the file
systems it mounts: that wait is a boot-time edge, not a Pulumi dependency.

Where published creation times vary widely (FSx for Lustre, its data repository
association, EFS mount targets) a duration also carries a range, and the schedule is
computed three times: every step at its low, typical and high figure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Duration:
    """A typical duration (``seconds``), optionally a range around it, and its basis."""

    seconds: int
    basis: str
    low: int | None = None
    high: int | None = None

    def __post_init__(self) -> None:
        low, high = self.range
        if not 0 <= low <= self.seconds <= high:
            raise ValueError(f"duration range {low}..{high} does not contain {self.seconds}")

    @property
    def range(self) -> tuple[int, int]:
        """(low, high) seconds; both equal ``seconds`` where no range is known."""
        low = self.seconds if self.low is None else self.low
        high = self.seconds if self.high is None else self.high
        return low, high

    @property
    def varies(self) -> bool:
        low, high = self.range
        return low != high


def typical(duration: Duration) -> int:
    return duration.seconds


def lowest(duration: Duration) -> int:
    return duration.range[0]


def highest(duration: Duration) -> int:
    return duration.range[1]


AWS_EC2_LAUNCH = (
    "AWS EC2 User Guide, 'Get started': 'It takes a short time for an instance to launch ... "
    "It can take a few minutes for the instance to be ready' "
    "(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/EC2_GetStarted.html)"
)
SYNC_API = "synchronous API call: the resource exists when the call returns (estimate)"

# Typical creation times by Pulumi resource type. AWS documents few of these; where it
# does not, the basis says so and gives the figure we assume and the provider's limit.
CREATION_TIMES: dict[str, Duration] = {
    "aws:fsx/lustreFileSystem:LustreFileSystem": Duration(
        900,
        "15 min assumed for PERSISTENT_2 with metadata configuration, within 10-20 min: AWS: "
        "'Within minutes, your file system is running' (FSx for Lustre FAQ, "
        "https://aws.amazon.com/fsx/lustre/faqs/); AWS's HPC workshop: 'file system creation will "
        "take ~10 mins' (aws-samples/aws-hpc-tutorials pull request 289); creation under 20 min "
        "with a small linked bucket, over an hour when millions of objects are imported at "
        "creation (aws/aws-parallelcluster issue 4211; here S3 is linked afterwards, by the "
        "association); the Terraform AWS provider waits up to 30 min",
        low=600,
        high=1200,
    ),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": Duration(
        300,
        "5 min assumed, within 4-30 min; no AWS figure: the association's acceptance test ran "
        "233 s longer than the PERSISTENT_2 file system's in one run, creation and deletion "
        "together (hashicorp/terraform-provider-aws pull request 22291); creation has outlasted "
        "the provider's 10 min default and needed up to 30 min "
        "(aws-samples/amazon-eks-machine-learning-with-terraform-and-kubeflow issue 112)",
        low=240,
        high=1800,
    ),
    "aws:efs/mountTarget:MountTarget": Duration(
        150,
        "2.5 min assumed, within 2.5-11.5 min: creation takes about a minute (Terraform log in "
        "turbot/steampipe-plugin-aws pull request 426) and AWS: 'wait 90 seconds after creating "
        "a mount target before you mount your file system' for DNS "
        "(EFS User Guide, mounting-fs-mount-cmd-dns-name.html); a mount target has taken over "
        "10 min to become available (hashicorp/terraform-provider-aws issue 15278)",
        low=150,
        high=690,
    ),
    "aws:efs/fileSystem:FileSystem": Duration(
        10, "CreateFileSystem returns while 'creating'; available within seconds (estimate)"
    ),
    "aws:ec2/natGateway:NatGateway": Duration(
        120,
        "no AWS figure; 2 min assumed (the AWS CLI waiter nat-gateway-available polls up to 10 min)",
    ),
    "aws:ec2/vpcEndpoint:VpcEndpoint": Duration(60, "no AWS figure; 1 min assumed"),
    "aws:ec2/instance:Instance": Duration(60, AWS_EC2_LAUNCH + "; 1 min to running assumed"),
    "aws:autoscaling/group:Group": Duration(
        30,
        "ASG created with wait_for_capacity_timeout=0 returns once the group exists (estimate); "
        "instance launch is counted in the pool boot step",
    ),
    "aws:ebs/volume:Volume": Duration(
        15, "no AWS figure; 15 s assumed (Terraform AWS provider waits up to 5 min)"
    ),
    "aws:ec2/volumeAttachment:VolumeAttachment": Duration(15, "no AWS figure; 15 s assumed"),
    "aws:iam/instanceProfile:InstanceProfile": Duration(
        10,
        "IAM is eventually consistent ('takes time to become visible', IAM User Guide, "
        "troubleshoot_general.html); 10 s assumed",
    ),
    "aws:iam/role:Role": Duration(5, "IAM eventual consistency; 5 s assumed"),
    "aws:imagebuilder/image:Image": Duration(
        2700,
        "45 min assumed, within 30-60 min: Image Builder's build instance installs the pinned "
        "packages, the Lustre client, enroot and compiles pyxis and efs-utils, the AMI is "
        "snapshotted, a test instance boots it and runs the test phase (estimate from the steps, "
        "slurmstack.plan.images.BAKE_MINUTES); the Terraform AWS provider allows 60 min by default "
        "(aws_imagebuilder_image, Timeouts); first deploy only: later `pulumi up`s reuse the image",
        low=1800,
        high=3600,
    ),
    "aws:ssm/association:Association": Duration(
        30,
        "AWS: an association runs 'immediately after it is created' (SSM API, "
        "CreateAssociation ApplyOnlyAtCronInterval); 30 s assumed",
    ),
}
DEFAULT_CREATION = Duration(3, SYNC_API)

HEAD_BOOT = Duration(
    180,
    AWS_EC2_LAUNCH
    + "; 3 min assumed for cloud-init: image check, agent, munge key, Slurm state volume "
    "(nothing is installed: the image holds it all)",
)
NODE_BOOT = Duration(
    420,
    AWS_EC2_LAUNCH
    + "; 7 min assumed for a GPU node: launch, Deep Learning AMI boot, NVMe RAID0, health check",
)
JOIN = Duration(60, "mounts and Slurm daemon start/registration; 1 min assumed")
READY = Duration(0, "every pool has joined")


@dataclass(frozen=True)
class Step:
    key: str
    label: str
    duration: Duration
    after: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class TimedStep:
    step: Step
    start: int
    finish: int


@dataclass(frozen=True)
class Timeline:
    steps: Mapping[str, TimedStep]
    critical_path: tuple[TimedStep, ...]

    @property
    def total_seconds(self) -> int:
        return self.critical_path[-1].finish if self.critical_path else 0


def creation_time(resource_type: str) -> Duration:
    if resource_type.startswith(("pulumi:", "slurmstack:")):
        return Duration(0, "component: no AWS call")
    return CREATION_TIMES.get(resource_type, DEFAULT_CREATION)


def schedule(
    steps: Iterable[Step],
    target: str | None = None,
    estimate: Callable[[Duration], int] = typical,
) -> Timeline:
    """Earliest start/finish of every step (unbounded parallelism, as Pulumi runs
    independent creates concurrently) and the chain that ends at ``target`` (default:
    the step that finishes last). ``estimate`` picks each step's figure (``typical``,
    ``lowest`` or ``highest``)."""
    by_key = {s.key: s for s in steps}
    timed: dict[str, TimedStep] = {}
    visiting: set[str] = set()

    def visit(key: str) -> TimedStep:
        done = timed.get(key)
        if done is not None:
            return done
        if key in visiting:
            raise ValueError(f"dependency cycle through {key}")
        visiting.add(key)
        step = by_key[key]
        start = max((visit(dep).finish for dep in step.after if dep in by_key), default=0)
        visiting.discard(key)
        timed[key] = TimedStep(step, start, start + estimate(step.duration))
        return timed[key]

    for key in by_key:
        visit(key)
    if not timed:
        return Timeline({}, ())
    last = (
        timed[target]
        if target is not None
        else max(timed.values(), key=lambda t: (t.finish, t.step.key))
    )
    chain = [last]
    while True:
        preds = [timed[d] for d in chain[-1].step.after if d in timed]
        if not preds:
            break
        chain.append(max(preds, key=lambda t: (t.finish, t.step.key)))
    chain.reverse()
    # Zero-length component steps say nothing about time; keep the path readable.
    path = tuple(t for t in chain if t.finish > t.start or t is last)
    return Timeline(timed, path)


@dataclass(frozen=True)
class TimelineRange:
    """The schedule at every step's typical figure, and the totals at its low and high."""

    typical: Timeline
    low_seconds: int
    high_seconds: int


def schedule_range(steps: Iterable[Step], target: str | None = None) -> TimelineRange:
    chosen = list(steps)
    return TimelineRange(
        typical=schedule(chosen, target),
        low_seconds=schedule(chosen, target, lowest).total_seconds,
        high_seconds=schedule(chosen, target, highest).total_seconds,
    )
