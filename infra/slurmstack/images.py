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
import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from slurmstack.catalog import Architecture, InstanceFacts
from slurmstack.plan import ClusterPlan, MountKind

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


# Bucket prefix of the build bundles (the build role reads it, nodes do not).
IMAGE_PREFIX = "images/"
# Where the component puts the bundle on the build and test instances.
BUNDLE_DIR = "/var/lib/slurmstack/image/bundle"
AGENT_ARCHIVE = "agent.tar.gz"
# AWSTOE step timeouts: the build (apt, Lustre client, efs-utils' Rust build, pyxis) and the
# tests (seconds).
BUILD_TIMEOUT_SECONDS = 5400
TEST_TIMEOUT_SECONDS = 900


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


def _packages(kind: ImageKind, serves_head: bool) -> tuple[str, ...]:
    """The apt packages of an image: by its kind only (plus the head's when the head boots
    an accelerated image), so adding, resizing or removing a pool never changes an image.
    CPU images carry both daemons: the head and CPU pools share them."""
    table = pins()["packages"]
    wanted = list(table["common"]) + list(table["worker"])
    if kind is ImageKind.CPU:
        wanted += table["head"] + table["efa_cpu"]
    elif serves_head:
        wanted += table["head"]
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
        out.append(
            ImagePlan(
                kind=kind,
                architecture=arch,
                parent_parameter=parents[kind.value][arch.value],
                roles=tuple(roles),
                packages=_packages(kind, HEAD_ROLE in roles),
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
    installs and every download with its checksum, from image_pins.json, and the contract
    its test phase checks. Nothing here names a pool: pools come and go, images stay."""
    p = pins()
    arch = image.architecture.value
    debs = p["enroot"]["debs"][arch]
    values: list[tuple[str, str]] = [
        ("IMAGE_KEY", image.key),
        ("IMAGE_KIND", image.kind.value),
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
        ("CONTRACT", " ".join(image_contract(image))),
    ]
    lines = ["# generated by slurmstack: settings of templates/image/build.sh for this image"]
    lines += [f"{key}={_quote(value)}" for key, value in values]
    return "\n".join(lines) + "\n"


def build_script() -> str:
    from slurmstack.render import templates_dir

    return (templates_dir() / "image" / "build.sh").read_text()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def agent_archive() -> bytes:
    """The node agent and its bootstrap runner as the image carries them: a gzipped tar,
    byte-for-byte the same for the same files (fixed owners, times and order), so its key
    in the bucket and the image's recipe change only when the agent does."""
    from slurmstack import render

    files = {**render.agent_files(), render.BOOTSTRAP_PATH: render.bootstrap_source()}
    executables = {render.AGENT_PATH, render.BOOTSTRAP_PATH}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            data = files[path].encode()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mtime, info.uid, info.gid = len(data), 0, 0, 0
            info.mode = 0o755 if path in executables else 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


@dataclass(frozen=True)
class BuildBundle:
    """What the build instance downloads: file name in the bundle -> content."""

    files: dict[str, bytes]

    def key(self, name: str) -> str:
        """Bucket key of a bundle file: ``images/<sha256>`` (content-addressed), but the agent's,
        which has one key: the image takes the agent of its bake (the boot refreshes it from
        the config store), so a new agent does not build new images."""
        if name == AGENT_ARCHIVE:
            return f"{IMAGE_PREFIX}{AGENT_ARCHIVE}"
        return f"{IMAGE_PREFIX}{sha256(self.files[name])}"

    @property
    def keys(self) -> tuple[tuple[str, str], ...]:
        return tuple((name, self.key(name)) for name in sorted(self.files))


def build_bundle(image: ImagePlan) -> BuildBundle:
    return BuildBundle(
        files={
            "build.sh": build_script().encode(),
            "image.env": build_env(image).encode(),
            AGENT_ARCHIVE: agent_archive(),
        }
    )


def component_document(
    plan: ClusterPlan, image: ImagePlan, bundle: BuildBundle, bucket: str, name: str
) -> str:
    """The AWSTOE component document (YAML) of ``image``."""
    from slurmstack.render import _render

    return _render(
        "image/component.yaml.j2",
        cluster=plan.name,
        image=image,
        name=name,
        bucket=bucket,
        bundle=bundle.keys,
        bundle_dir=BUNDLE_DIR,
        build_timeout=BUILD_TIMEOUT_SECONDS,
        test_timeout=TEST_TIMEOUT_SECONDS,
    )


def image_contract(image: ImagePlan) -> tuple[str, ...]:
    """What the image's test phase checks with the boot's own check: everything any node of
    its kind may need (a pool's own contract is a subset: no scratch, no Lustre, ...)."""
    items = [*BASE_CONTRACT, *WORKER_CONTRACT, *SCRATCH_CONTRACT]
    items += [item for group in MOUNT_CONTRACT.values() for item in group]
    if image.kind is ImageKind.CPU or image.serves_head:
        items += HEAD_CONTRACT
    return tuple(dict.fromkeys(items))


# --- the contract a node checks at boot ----------------------------------------------------

BASE_CONTRACT = ("cmd:munged", "cmd:scontrol", "cmd:nft", "py:boto3")
HEAD_CONTRACT = ("cmd:slurmctld",)
WORKER_CONTRACT = ("cmd:slurmd", "cmd:srun", "cmd:enroot", f"file:{PYXIS_PLUGIN}")
SCRATCH_CONTRACT = ("cmd:mdadm", "cmd:mkfs.ext4")
MOUNT_CONTRACT = {
    MountKind.EFS: ("cmd:mount.efs",),
    MountKind.LUSTRE: ("cmd:mount.lustre", "cmd:lctl"),
}


def contract(plan: ClusterPlan, role: str) -> tuple[str, ...]:
    """What the image of ``role`` must hold, as the bootstrap's ``check`` step reads it:
    ``cmd:NAME`` (an executable on PATH or in /sbin, /usr/sbin), ``file:PATH``,
    ``py:MODULE`` (importable by the system python3). A baked image holds all of it; an image
    of your own must too, or the node fails its boot (and a worker is replaced)."""
    items = list(BASE_CONTRACT)
    mounts: tuple[Any, ...]
    if role == HEAD_ROLE:
        items += HEAD_CONTRACT
        mounts = plan.mounts
    else:
        pool = plan.pool(role)
        items += WORKER_CONTRACT
        if pool.local_scratch_mount is not None:
            items += SCRATCH_CONTRACT
        mounts = pool.mounts
    for kind in (MountKind.EFS, MountKind.LUSTRE):
        if any(m.kind is kind for m in mounts):
            items += MOUNT_CONTRACT[kind]
    return tuple(items)
