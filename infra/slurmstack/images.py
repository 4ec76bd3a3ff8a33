"""The node images: which images a cluster bakes, from which parents, with what inside.

Pure (no Pulumi): the stack (slurmstack.stack.image), the cloud-init documents (the image
contract a node checks at boot) and ``slurmstack plan`` read the same decisions from here.

One image per distinct kind of node the cluster uses and per architecture: NVIDIA GPU
nodes on the Deep Learning Base GPU AMI, Neuron nodes on the Neuron DLAMI, and CPU pools
and the head node on plain Ubuntu 24.04. A node that names its own AMI (``image.ami``,
``head_node.ami``, ``pools[].ami``) bakes nothing and boots that image; the contract below
is what it must hold, and its boot checks it.

What goes in, and every version and download, is data: ``image_pins.json`` beside this file.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from slurmstack.catalog import Architecture, InstanceFacts
from slurmstack.fabric import FabricProfile
from slurmstack.plan import ClusterPlan, MountKind, PoolPlan

PINS_FILE = Path(__file__).with_name("image_pins.json")
HEAD_ROLE = "head"

# Where `make install` of pyxis puts its SPANK plugin (slurmstack.render.PYXIS_PLUGIN, which
# plugstack.conf loads).
PYXIS_PLUGIN = "/usr/local/lib/slurm/spank_pyxis.so"
# The build's record inside the image: every version baked (the test phase and operators read it).
IMAGE_MANIFEST = "/etc/slurmstack/image.json"

# The build instance: any type of the image's architecture will do (nothing is compiled for
# the instance, the Lustre modules are for the parent's kernel); a compute-optimised size
# with 8 vCPUs keeps pyxis and efs-utils builds short.
DEFAULT_BUILD_INSTANCE = {Architecture.X86_64: "c7i.2xlarge", Architecture.ARM64: "c7g.2xlarge"}
# Image Builder's build and test stages of one image, an estimate from what they do: a build
# instance boots the parent and installs packages, the Lustre client and enroot, compiles pyxis
# and efs-utils (Rust) (15 to 30 min); the AMI's snapshot (5 to 15 min for 30 to 120 GiB); a
# second instance boots the new AMI and runs the test phase (5 to 15 min). The AWS provider
# gives an image build 60 minutes by default (Terraform AWS provider, aws_imagebuilder_image,
# "Timeouts": create 60m), the stack allows IMAGE_BUILD_TIMEOUT.
BAKE_MINUTES = (30, 60)
# Root volume of the build instance, so the AMI's snapshot: the DLAMIs need at least 100 GiB
# (CUDA, frameworks); nodes grow it to their own root_volume size at launch.
BUILD_VOLUME_GIB = {"nvidia": 120, "neuron": 120, "cpu": 30}


class ImageKind(enum.StrEnum):
    NVIDIA = "nvidia"
    NEURON = "neuron"
    CPU = "cpu"


@cache
def pins() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PINS_FILE.read_text())
    return data


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

    @property
    def key(self) -> str:
        """Short, stable name: e.g. ``nvidia-x86-64``."""
        return f"{self.kind.value}-{self.architecture.value.replace('_', '-')}"

    @property
    def serves_head(self) -> bool:
        return HEAD_ROLE in self.roles

    @property
    def serves_workers(self) -> bool:
        return any(role != HEAD_ROLE for role in self.roles)

    @property
    def volume_gib(self) -> int:
        return BUILD_VOLUME_GIB[self.kind.value]

    def baked(self) -> tuple[tuple[str, str], ...]:
        """(piece, version) of everything the image carries, as plan shows it."""
        p = pins()
        out = [
            ("Slurm", f"{p['slurm']['version']} (Ubuntu {p['slurm']['package_version']})"),
            ("munge, PMIx", "Ubuntu 24.04's, held with Slurm"),
            ("Lustre client", "FSx build for the parent's kernel (kernel held)"),
            ("amazon-efs-utils", p["efs_utils"]["version"]),
            ("enroot", p["enroot"]["version"]),
            ("pyxis", f"{p['pyxis']['version']} (built against the Slurm above)"),
            ("nftables", "Ubuntu 24.04's"),
            ("node agent", "slurmstack's (refreshed from the config store at boot)"),
        ]
        if self.kind is ImageKind.NVIDIA:
            out.append(("DCGM", p["dcgm"]["package"]))
        return tuple(out)


def _wants_own_image(plan: ClusterPlan, role: str) -> str | None:
    spec = plan.spec
    own = spec.head_node.ami if role == HEAD_ROLE else plan.pool(role).ami
    return own or spec.image.ami


def own_ami(plan: ClusterPlan, role: str) -> str | None:
    """The AMI the definition names for ``role`` (its own key first, then image.ami)."""
    return _wants_own_image(plan, role)


def _facts(plan: ClusterPlan, role: str) -> InstanceFacts:
    return plan.head.facts if role == HEAD_ROLE else plan.pool(role).facts


def _packages(roles: tuple[str, ...], pools: list[PoolPlan]) -> tuple[str, ...]:
    table = pins()["packages"]
    wanted = list(table["common"])
    if HEAD_ROLE in roles:
        wanted += table["head"]
    if any(r != HEAD_ROLE for r in roles):
        wanted += table["worker"]
    if any(p.fabric is FabricProfile.EFA_CPU for p in pools):
        wanted += table["efa_cpu"]
    return tuple(dict.fromkeys(wanted))


def image_plans(plan: ClusterPlan) -> tuple[ImagePlan, ...]:
    """Every image the cluster bakes, in a stable order (head's first, then by key)."""
    groups: dict[tuple[ImageKind, Architecture], list[str]] = {}
    for role in (HEAD_ROLE, *(p.name for p in plan.pools)):
        if own_ami(plan, role) is not None:
            continue
        facts = _facts(plan, role)
        groups.setdefault((kind_of(facts), facts.architecture), []).append(role)
    parents = pins()["parents"]
    image = plan.spec.image
    out = []
    for (kind, arch), roles in groups.items():
        pools = [plan.pool(r) for r in roles if r != HEAD_ROLE]
        out.append(
            ImagePlan(
                kind=kind,
                architecture=arch,
                parent_parameter=parents[kind.value][arch.value],
                roles=tuple(roles),
                packages=_packages(tuple(roles), pools),
                build_instance_type=image.build_instance_type or DEFAULT_BUILD_INSTANCE[arch],
                version=image.version,
            )
        )
    return tuple(out)


def image_of(plan: ClusterPlan, role: str) -> ImagePlan | None:
    """The baked image ``role`` boots, or None when it brings its own AMI."""
    for image in image_plans(plan):
        if role in image.roles:
            return image
    return None


def parent_available(kind: ImageKind, arch: Architecture) -> bool:
    return arch.value in pins()["parents"][kind.value]


# --- the build inputs -------------------------------------------------------------------


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def build_env(image: ImagePlan) -> str:
    """The build script's settings for ``image`` (a shell file it sources): everything it
    installs and every download with its checksum, from image_pins.json."""
    p = pins()
    arch = image.architecture.value
    debs = p["enroot"]["debs"][arch]
    values: list[tuple[str, str]] = [
        ("IMAGE_KEY", image.key),
        ("IMAGE_KIND", image.kind.value),
        ("IMAGE_ROLES", " ".join(image.roles)),
        ("IMAGE_VERSION", str(image.version)),
        ("APT_PACKAGES", " ".join(image.packages)),
        ("BUILD_PACKAGES", " ".join(p["packages"]["build"])),
        ("HELD_PACKAGES", " ".join(p["packages"]["held"])),
        ("SLURM_VERSION", p["slurm"]["version"]),
        ("SLURM_PACKAGE_VERSION", p["slurm"]["package_version"]),
        ("LUSTRE", "fsx"),
        ("LUSTRE_REPOSITORY", p["lustre"]["repository"]),
        ("LUSTRE_KEY_URL", p["lustre"]["key_url"]),
        ("EFS_UTILS", "source"),
        ("EFS_UTILS_VERSION", p["efs_utils"]["version"]),
        ("EFS_UTILS_URL", p["efs_utils"]["url"]),
        ("EFS_UTILS_SHA256", p["efs_utils"]["sha256"] or ""),
        ("ENROOT_VERSION", p["enroot"]["version"]),
        ("ENROOT_DEBS", " ".join(d["url"] for d in debs)),
        ("ENROOT_SHA256S", " ".join(d["sha256"] or "unrecorded" for d in debs)),
        ("PYXIS_VERSION", p["pyxis"]["version"]),
        ("PYXIS_URL", p["pyxis"]["url"]),
        ("PYXIS_SHA256", p["pyxis"]["sha256"] or ""),
        ("PYXIS_PLUGIN", PYXIS_PLUGIN),
        ("DCGM_PACKAGE", p["dcgm"]["package"] if image.kind is ImageKind.NVIDIA else ""),
        ("KERNEL_HOLD", "yes"),
        ("IMAGE_MANIFEST", IMAGE_MANIFEST),
    ]
    lines = ["# generated by slurmstack: settings of templates/image/build.sh for this image"]
    lines += [f"{key}={_quote(value)}" for key, value in values]
    return "\n".join(lines) + "\n"


def build_script() -> str:
    from slurmstack.render import templates_dir

    return (templates_dir() / "image" / "build.sh").read_text()


def sha256(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


# --- the contract a node checks at boot ----------------------------------------------------


def contract(plan: ClusterPlan, role: str) -> tuple[str, ...]:
    """What the image of ``role`` must hold, as the bootstrap's ``check`` step reads it:
    ``cmd:NAME`` (an executable on PATH or in /sbin, /usr/sbin), ``file:PATH``,
    ``py:MODULE`` (importable by the system python3). A baked image holds all of it; an image
    of your own must too, or the node fails its boot (and a worker is replaced)."""
    items = ["cmd:munged", "cmd:scontrol", "cmd:nft", "py:boto3"]
    mounts: tuple[Any, ...]
    if role == HEAD_ROLE:
        items.append("cmd:slurmctld")
        mounts = plan.mounts
    else:
        pool = plan.pool(role)
        items += ["cmd:slurmd", "cmd:srun", "cmd:enroot", f"file:{PYXIS_PLUGIN}"]
        if pool.local_scratch_mount is not None:
            items += ["cmd:mdadm", "cmd:mkfs.ext4"]
        mounts = pool.mounts
    kinds = {m.kind for m in mounts}
    if MountKind.EFS in kinds:
        items.append("cmd:mount.efs")
    if MountKind.LUSTRE in kinds:
        items += ["cmd:mount.lustre", "cmd:lctl"]
    return tuple(items)
