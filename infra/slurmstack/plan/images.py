"""The node images: which images a cluster bakes, from which parents, with what inside, and
what each node's image must hold (the image contract its first boot checks).

One image per distinct kind of node the cluster uses and per architecture: NVIDIA GPU
nodes on the Deep Learning Base GPU AMI, Neuron nodes on the Neuron DLAMI, and CPU pools
and the head node on plain Ubuntu 24.04. A node that names its own AMI (``image.ami``,
``head_node.ami``, ``pools[].ami``) bakes nothing and boots that image; the contract is what
it must hold, and its boot checks it.

What goes in, and every version and download, is data: ``image_pins.json`` in the package.
The build's inputs (settings, script, component document) are rendered by
slurmstack.render.image; the stack's Image Builder resources are slurmstack.stack.image.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from slurmstack.catalog import Architecture, InstanceFacts
from slurmstack.contract import (
    HEAD_ROLE,
    IMAGE_ACCOUNTING_ITEMS,
    IMAGE_BASE_ITEMS,
    IMAGE_DIRECTORY_ITEMS,
    IMAGE_HEAD_ITEMS,
    IMAGE_LOCAL_DATABASE_ITEMS,
    IMAGE_LOGIN_ITEMS,
    IMAGE_MOUNT_ITEMS,
    IMAGE_SCRATCH_ITEMS,
    IMAGE_WORKER_ITEMS,
    MountKind,
    is_login_role,
    login_pool_of,
)
from slurmstack.image_pins import image_pins
from slurmstack.plan.accounting import accounting_plan
from slurmstack.plan.cluster import ClusterPlan
from slurmstack.plan.slurm import pool_slurm_version
from slurmstack.plan.storage import MountPlan
from slurmstack.slurm_releases import SlurmSource, source
from slurmstack.spec import ParentParameterVersion

# The build instance: any type of the image's architecture will do (nothing is compiled for
# the instance, the Lustre modules are for the parent's kernel); a compute-optimised size
# with 8 vCPUs keeps pyxis and efs-utils builds short.
DEFAULT_BUILD_INSTANCE = {Architecture.X86_64: "c7i.2xlarge", Architecture.ARM64: "c7g.2xlarge"}
# Image Builder's build and test stages of one image, an estimate from what they do: a build
# instance boots the parent and installs packages, the Lustre client and enroot, compiles pyxis
# and efs-utils (Rust) (15 to 30 min); the AMI's snapshot (5 to 15 min for 30 to 120 GiB); a
# second instance boots the new AMI and runs the test phase (5 to 15 min). The AWS provider
# gives an image build 60 minutes by default (Terraform AWS provider, aws_imagebuilder_image,
# "Timeouts"), the stack allows slurmstack.stack.image.IMAGE_BUILD_TIMEOUT.
BAKE_MINUTES = (30, 60)


class ImageKind(enum.StrEnum):
    NVIDIA = "nvidia"
    NEURON = "neuron"
    CPU = "cpu"


def kind_of(facts: InstanceFacts) -> ImageKind:
    if facts.accelerator is None:
        return ImageKind.CPU
    return ImageKind.NEURON if facts.accelerator.kind == "neuron" else ImageKind.NVIDIA


@dataclass(frozen=True)
class ImagePlan:
    """One image the cluster bakes."""

    kind: ImageKind
    architecture: Architecture
    parent_parameter: str  # public SSM parameter of the parent AMI ("ssm:" in the recipe)
    roles: tuple[str, ...]  # "head" and/or pool names that boot it
    packages: tuple[str, ...]  # apt packages installed (build tools excluded)
    build_instance_type: str
    version: int  # the definition's image.version: a new one takes a new parent
    slurm: SlurmSource  # slurm.version's pinned source, built in the image
    parent_ami: str | None = None  # image.parents: a pinned parent, instead of the parameter's
    lags: bool = False  # for pools that stay on an older Slurm than the head's (staged upgrade)
    parent_version: int | None = None  # image.parents: a pinned version of the parameter

    @property
    def parent(self) -> str:
        """What the recipe is built on, as the recipe's name records it: the pinned AMI,
        ``<parameter>:<version>`` (a pinned version, which the stack resolves to its AMI at
        deploy time: parent_selector), or ``ssm:<parameter>`` (resolved by Image Builder when
        it builds, then kept)."""
        if self.parent_ami:
            return self.parent_ami
        if self.parent_version is not None:
            return self.parent_selector
        return f"ssm:{self.parent_parameter}"

    @property
    def parent_selector(self) -> str:
        """GetParameter's name for the pinned version (Systems Manager User Guide, "Working
        with parameter versions": ``name:version``; a version that does not exist is an
        error, never the latest)."""
        return f"{self.parent_parameter}:{self.parent_version}"

    @property
    def parent_pin(self) -> str:
        """How the parent is chosen, as `plan` says it."""
        if self.parent_ami:
            return f"pinned by image.parents to {self.parent_ami}"
        if self.parent_version is not None:
            return (
                f"pinned by image.parents to version {self.parent_version} of "
                f"{self.parent_parameter}; the stack reads that version's AMI at deploy time "
                f"and exports it (stack output image_parents.{self.key})"
            )
        return "resolved by Image Builder when the image is built, then kept"

    @property
    def key(self) -> str:
        """Short, stable name: e.g. ``nvidia-x86-64``; an image of pools lagging the head's
        Slurm says its release (``nvidia-x86-64-slurm-24-11-5``)."""
        key = _key(self.kind, self.architecture)
        if self.lags:
            key += "-slurm-" + self.slurm.version.replace(".", "-")
        return key

    @property
    def serves_head(self) -> bool:
        return HEAD_ROLE in self.roles

    @property
    def carries_head_programs(self) -> bool:
        """Whether the image bakes the head's programs (slurmdbd, MariaDB, Prometheus,
        Grafana): images the head boots, and every CPU image, which the head and CPU pools
        share, so pointing the head at an AMI of its own changes no pool's image."""
        return self.kind is ImageKind.CPU or self.serves_head

    @property
    def serves_workers(self) -> bool:
        return any(role != HEAD_ROLE for role in self.roles)

    @property
    def volume_gib(self) -> int:
        """The build instance's root volume, so the AMI's root snapshot: every node that
        boots the image needs a root volume at least this large (image_pins.json,
        root_volume_gib; checks.instances.root_volume_image_snapshot)."""
        size: int = image_pins()["root_volume_gib"][self.kind.value]
        return size

    def baked(self) -> tuple[tuple[str, str], ...]:
        """(piece, version) of everything the image carries, as plan shows it."""
        p = image_pins()
        features = "PMIx, hwloc, cgroup v2, MySQL, slurmrestd, sackd"
        if self.kind is ImageKind.NVIDIA:
            features += ", NVML"
        out = [
            (
                "Slurm",
                f"{self.slurm.version} (built from {self.slurm.tag}, sha256-pinned; {features})",
            ),
            ("munge, PMIx", "Ubuntu 24.04's, held"),
            ("Lustre client", "FSx build for the parent's kernel (kernel held)"),
            ("amazon-efs-utils", p["efs_utils"]["version"]),
            ("enroot", p["enroot"]["version"]),
            ("pyxis", f"{p['pyxis']['version']} (built against the Slurm above)"),
            ("nftables", "Ubuntu 24.04's"),
            ("node agent", "slurmstack's (refreshed from the config store at boot)"),
        ]
        if self.carries_head_programs:
            out.append(
                (
                    "slurmdbd, MariaDB",
                    "slurmdbd of the Slurm above, Ubuntu 24.04's MariaDB; units off until accounting asks",
                )
            )
        if self.kind is ImageKind.NVIDIA:
            out.append(("DCGM", p["dcgm"]["package"]))
            out.append(
                (
                    "nccl-tests",
                    f"{p['nccl_tests']['version']} (built against the parent's CUDA, NCCL, MPI)",
                )
            )
        if self.kind is ImageKind.CPU:
            out.append(
                (
                    "EFA installer",
                    f"{p['efa_installer']['version']} (libfabric, rdma-core, Open MPI in "
                    "/opt/amazon, as on the Deep Learning AMIs)",
                )
            )
        return tuple(out)


def own_ami(plan: ClusterPlan, role: str) -> str | None:
    """The AMI the definition names for ``role`` (its own key first, then image.ami)."""
    spec = plan.spec
    if is_login_role(role):
        # A login pool boots the head's own AMI unless it names one.
        own = plan.login_pool(login_pool_of(role)).ami or spec.head_node.ami
    else:
        own = spec.head_node.ami if role == HEAD_ROLE else plan.pool(role).ami
    return own or spec.image.ami


def _facts(plan: ClusterPlan, role: str) -> InstanceFacts:
    if is_login_role(role):
        return plan.login_pool(login_pool_of(role)).facts
    return plan.head.facts if role == HEAD_ROLE else plan.pool(role).facts


def _head_packages() -> list[str]:
    """What an image that may boot the head carries for it: slurmctld, and accounting's
    slurmdbd and MariaDB whatever the definition says of accounting (their units stay off in
    the image; the head's agent starts what the definition asks), so turning accounting on or
    off, or to another database, never builds a new image."""
    table = image_pins()["packages"]
    return [
        *table["head"],
        *table["accounting"],
        *table["accounting_local_database"],
        *table["monitoring_head"],
    ]


def _packages(kind: ImageKind, serves_head: bool) -> tuple[str, ...]:
    """The apt packages of an image: by its kind only (plus the head's when the head boots
    an accelerated image), so adding, resizing or removing a pool never changes an image.
    CPU images carry both daemons: the head and CPU pools share them."""
    table = image_pins()["packages"]
    # enroot's runtime dependencies: it is built from source, not installed as a .deb.
    wanted = [*table["common"], *table["people"], *image_pins()["enroot"]["runtime_packages"]]
    wanted += table["worker"]
    wanted += table["monitoring"]
    if kind is ImageKind.CPU:
        # CPU pools run MPI over EFA with the EFA installer's libfabric and Open MPI, as the
        # Deep Learning AMIs do (the installer is not an apt package: build.sh installs it);
        # gcc for its mpicc.
        wanted += _head_packages() + table["mpi_cpu"]
    elif serves_head:
        wanted += _head_packages()
    return tuple(dict.fromkeys(wanted))


def head_packages(plan: ClusterPlan) -> tuple[str, ...]:
    """The packages this cluster's accounting needs in the head's image: slurmdbd, and
    MariaDB's server for the local database (none with accounting off). Every image that
    carries the head's packages bakes them (_head_packages); an image of your own must hold
    them too, and the head's boot checks their commands (role_image_contract)."""
    accounting = accounting_plan(plan)
    if accounting is None:
        return ()
    table = image_pins()["packages"]
    local = table["accounting_local_database"] if accounting.database.local else []
    return (*table["accounting"], *local)


def image_plans(plan: ClusterPlan) -> tuple[ImagePlan, ...]:
    """Every image the cluster bakes, in a stable order (head's first, then by key)."""
    # By kind, architecture and Slurm release: a pool lagging the head in a staged upgrade
    # (pools[].slurm_version) boots an image of its own release.
    groups: dict[tuple[ImageKind, Architecture, str], list[str]] = {}
    for role in (HEAD_ROLE, *(p.name for p in plan.pools), *(p.role for p in plan.login_pools)):
        if own_ami(plan, role) is not None:
            continue
        facts = _facts(plan, role)
        slurm_version = _slurm_version(plan, role)
        groups.setdefault((kind_of(facts), facts.architecture, slurm_version), []).append(role)
    parents = image_pins()["parents"]
    image = plan.spec.image
    out = []
    for (kind, arch, slurm_version), roles in groups.items():
        slurm = source(slurm_version)
        # checks.slurm refuses a version without a pinned source before a plan is built.
        assert slurm is not None, f"Slurm {slurm_version} has no pinned source"
        out.append(
            ImagePlan(
                kind=kind,
                architecture=arch,
                parent_parameter=parents[kind.value][arch.value],
                roles=tuple(roles),
                packages=_packages(kind, HEAD_ROLE in roles),
                build_instance_type=image.build_instance_type or DEFAULT_BUILD_INSTANCE[arch],
                version=image.version,
                slurm=slurm,
                lags=slurm_version != plan.spec.slurm.version,
                **_parent_pin(image.parents.get(_key(kind, arch))),  # type: ignore[call-overload]
            )
        )
    return tuple(out)


def _slurm_version(plan: ClusterPlan, role: str) -> str:
    # Login nodes run the head's release: their clients (and sackd) talk to slurmctld.
    if role == HEAD_ROLE or is_login_role(role):
        return plan.spec.slurm.version
    spec = next(p for p in plan.spec.pools if p.name == role)
    return pool_slurm_version(plan.spec, spec)


def _parent_pin(pin: str | ParentParameterVersion | None) -> dict[str, Any]:
    """ImagePlan's fields for an image.parents value: an AMI id, or a parameter version."""
    if pin is None:
        return {}
    if isinstance(pin, str):
        return {"parent_ami": pin}
    return {"parent_version": pin.parameter_version}


def _key(kind: ImageKind, arch: Architecture) -> str:
    return f"{kind.value}-{arch.value.replace('_', '-')}"


def image_of(plan: ClusterPlan, role: str) -> ImagePlan | None:
    """The baked image ``role`` boots, or None when it brings its own AMI."""
    for image in image_plans(plan):
        if role in image.roles:
            return image
    return None


def parent_available(kind: ImageKind, arch: Architecture) -> bool:
    return arch.value in image_pins()["parents"][kind.value]


# --- the image contract (its items: slurmstack.contract, "the node image") ---------------------


def image_contract(image: ImagePlan) -> tuple[str, ...]:
    """What the image's test phase checks with the boot's own check: everything any node of
    its kind may need (a role's own contract is a subset: no scratch, no Lustre, ...)."""
    items = [*IMAGE_BASE_ITEMS, *IMAGE_WORKER_ITEMS, *IMAGE_SCRATCH_ITEMS, *IMAGE_LOGIN_ITEMS]
    items += IMAGE_DIRECTORY_ITEMS
    items += [item for group in IMAGE_MOUNT_ITEMS.values() for item in group]
    if image.carries_head_programs:
        items += [*IMAGE_HEAD_ITEMS, *IMAGE_ACCOUNTING_ITEMS, *IMAGE_LOCAL_DATABASE_ITEMS]
    return tuple(dict.fromkeys(items))


def role_image_contract(plan: ClusterPlan, role: str) -> tuple[str, ...]:
    """What the image of ``role`` must hold, as the first-boot script's ``check`` step reads
    it. A baked image holds all of it; an image of your own must too, or the node fails its
    boot (and a worker is replaced)."""
    items = list(IMAGE_BASE_ITEMS)
    mounts: tuple[MountPlan, ...]
    if role == HEAD_ROLE:
        items += IMAGE_HEAD_ITEMS
        # Accounting's, as the definition asks (slurmdbd; MariaDB for the local database).
        accounting = accounting_plan(plan)
        if accounting is not None:
            items += IMAGE_ACCOUNTING_ITEMS
            if accounting.database.local:
                items += IMAGE_LOCAL_DATABASE_ITEMS
        mounts = plan.mounts
    elif is_login_role(role):
        items += IMAGE_LOGIN_ITEMS
        mounts = plan.mounts
    else:
        pool = plan.pool(role)
        items += IMAGE_WORKER_ITEMS
        if pool.local_scratch_mount is not None:
            items += IMAGE_SCRATCH_ITEMS
        mounts = pool.mounts
    for kind in (MountKind.EFS, MountKind.LUSTRE, MountKind.OPENZFS, MountKind.MOUNTPOINT_S3):
        if any(m.kind is kind for m in mounts):
            items += IMAGE_MOUNT_ITEMS[kind]
    if plan.spec.directory is not None:
        items += IMAGE_DIRECTORY_ITEMS
    return tuple(items)
