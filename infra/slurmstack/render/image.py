"""The build inputs of a node image (slurmstack.plan.images decides which images): the build
script's settings, the build bundle (script, settings, the node agent's archive) and the AWSTOE
component document that fetches and runs it. The stack (slurmstack.stack.image) uploads the
bundle and registers the component; tests/image runs the same script on the same settings."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass

from slurmstack.contract import (
    AGENT_PATH,
    BOOTSTRAP_PATH,
    IMAGE_BUNDLE_DIR,
    IMAGE_MANIFEST_PATH,
    IMAGE_PREFIX,
    NCCL_TESTS_DIR,
    PYXIS_PLUGIN,
)
from slurmstack.plan import ClusterPlan, ImageKind, ImagePlan, image_contract, image_pins
from slurmstack.render.cloud_init import bootstrap_source
from slurmstack.render.node import agent_files
from slurmstack.render.templates import render_template, templates_dir

# The agent's archive in the bundle (one bucket key, see BuildBundle.key).
AGENT_ARCHIVE = "agent.tar.gz"
# AWSTOE step timeouts: the build (apt, Lustre client, efs-utils' Rust build, pyxis) and the
# tests (seconds).
BUILD_TIMEOUT_SECONDS = 5400
TEST_TIMEOUT_SECONDS = 900


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def build_packages() -> tuple[str, ...]:
    """What the bake compiles with (pyxis, nccl-tests, efs-utils, enroot); the bake removes
    those it installed itself once it is done (templates/image/build.sh, remove_build_tools)."""
    p = image_pins()
    wanted = [*p["packages"]["build"], *p["efs_utils"]["build_packages"]]
    wanted += p["enroot"]["build_packages"]
    return tuple(dict.fromkeys(wanted))


def _git_settings(prefix: str, git: dict[str, str]) -> list[tuple[str, str]]:
    """A source pinned by git commit (slurmstack.image_pins): where, which tag, which commit
    (empty when unrecorded: the bake refuses it, and validate reports it first)."""
    return [
        (f"{prefix}_REPOSITORY", git["repository"]),
        (f"{prefix}_TAG", git["tag"]),
        (f"{prefix}_COMMIT", git.get("commit") or ""),
    ]


_NO_GIT = {"repository": "", "tag": "", "commit": ""}


def grafana_settings(image: ImagePlan) -> list[tuple[str, str]]:
    """Grafana from Grafana Labs' apt repository at its pinned version, on images that carry
    the head's programs (the head runs it); the key's fingerprint when image_pins records one."""
    grafana = image_pins()["grafana"]
    on = image.carries_head_programs
    return [
        ("GRAFANA_VERSION", grafana["version"] if on else ""),
        ("GRAFANA_REPOSITORY", grafana["repository"] if on else ""),
        ("GRAFANA_SUITE", grafana["suite"] if on else ""),
        ("GRAFANA_KEY_URL", grafana["key_url"] if on else ""),
        ("GRAFANA_KEY_FINGERPRINT", (grafana["key_fingerprint"] or "") if on else ""),
    ]


def build_env(image: ImagePlan) -> str:
    """The build script's settings for ``image`` (a shell file it sources): everything it
    installs and every download with its checksum, from image_pins.json, where the agent goes,
    and the contract its test phase checks. Nothing here names a pool: pools come and go,
    images stay."""
    p = image_pins()
    nccl, nvidia = p["nccl_tests"], image.kind is ImageKind.NVIDIA
    efs, enroot, exporter = p["efs_utils"], p["enroot"], p["dcgm_exporter"]
    efa, cpu, mountpoint = p["efa_installer"], image.kind is ImageKind.CPU, p["mountpoint_s3"]
    values: list[tuple[str, str]] = [
        ("IMAGE_KEY", image.key),
        ("IMAGE_KIND", image.kind.value),
        ("IMAGE_VERSION", str(image.version)),
        ("APT_PACKAGES", " ".join(image.packages)),
        ("BUILD_PACKAGES", " ".join(build_packages())),
        # Slurm's libraries, headers and all: the bake keeps them (the runtime libraries come
        # with them, and pyxis' spank.h needs Slurm's).
        ("SLURM_BUILD_PACKAGES", " ".join(p["packages"]["slurm_build"])),
        ("HELD_PACKAGES", " ".join(p["packages"]["held"])),
        # Slurm: the definition's slurm.version, from its pinned source (build.sh, slurm).
        ("SLURM_VERSION", image.slurm.version),
        ("SLURM_URL", image.slurm.url),
        ("SLURM_SHA256", image.slurm.sha256),
        ("SLURM_NVML", "yes" if nvidia else "no"),
        ("LUSTRE", "fsx"),
        ("LUSTRE_REPOSITORY", p["lustre"]["repository"]),
        ("LUSTRE_KEY_URL", p["lustre"]["key_url"]),
        ("EFS_UTILS", "source"),
        ("EFS_UTILS_VERSION", efs["version"]),
        *_git_settings("EFS_UTILS", efs["git"]),
        ("MOUNTPOINT_S3", "release"),
        ("MOUNTPOINT_S3_VERSION", mountpoint["version"]),
        ("MOUNTPOINT_S3_URL", mountpoint["package"][image.architecture.value]),
        ("MOUNTPOINT_S3_KEYS_URL", mountpoint["signing_key"]["keys"]),
        ("MOUNTPOINT_S3_FINGERPRINT", mountpoint["signing_key"]["fingerprint"] or ""),
        ("ENROOT_VERSION", enroot["version"]),
        *_git_settings("ENROOT", enroot["git"]),
        ("PYXIS_VERSION", p["pyxis"]["version"]),
        ("PYXIS_URL", p["pyxis"]["url"]),
        ("PYXIS_SHA256", p["pyxis"]["sha256"] or ""),
        ("PYXIS_PLUGIN", PYXIS_PLUGIN),
        ("DCGM_PACKAGE", p["dcgm"]["package"] if image.kind is ImageKind.NVIDIA else ""),
        # dcgm-exporter: NVIDIA images only (empty version: not on this image).
        ("DCGM_EXPORTER_VERSION", exporter["version"] if nvidia else ""),
        *_git_settings("DCGM_EXPORTER", exporter["git"] if nvidia else _NO_GIT),
        ("DCGM_EXPORTER_GO", exporter["go_toolchain"] if nvidia else ""),
        # Grafana: images with the head's programs (empty version: not on this image).
        *grafana_settings(image),
        # The EFA installer: CPU images (the Deep Learning AMIs carry their own).
        ("EFA_INSTALLER_VERSION", efa["version"] if cpu else ""),
        ("EFA_INSTALLER_URL", efa["url"] if cpu else ""),
        ("EFA_INSTALLER_SHA256", (efa["sha256"] or "") if cpu else ""),
        # nccl-tests: NVIDIA images only (empty version: not on this image).
        ("NCCL_TESTS_VERSION", nccl["version"] if nvidia else ""),
        ("NCCL_TESTS_URL", nccl["url"] if nvidia else ""),
        ("NCCL_TESTS_SHA256", (nccl["sha256"] or "") if nvidia else ""),
        ("NCCL_TESTS_DIR", NCCL_TESTS_DIR),
        ("KERNEL_HOLD", "yes"),
        ("IMAGE_MANIFEST", IMAGE_MANIFEST_PATH),
        ("AGENT_PATH", AGENT_PATH),
        ("BOOTSTRAP_PATH", BOOTSTRAP_PATH),
        ("CONTRACT", " ".join(image_contract(image))),
    ]
    lines = ["# generated by slurmstack: settings of templates/image/build.sh for this image"]
    lines += [f"{key}={_quote(value)}" for key, value in values]
    return "\n".join(lines) + "\n"


def build_script() -> str:
    return (templates_dir() / "image" / "build.sh").read_text()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def agent_archive() -> bytes:
    """The node agent and its bootstrap runner as the image carries them: a gzipped tar,
    byte-for-byte the same for the same files (fixed owners, times and order), so its key
    in the bucket and the image's recipe change only when the agent does."""
    files = {**agent_files(), BOOTSTRAP_PATH: bootstrap_source()}
    executables = {AGENT_PATH, BOOTSTRAP_PATH}
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
    return render_template(
        "image/component.yaml.j2",
        cluster=plan.name,
        image=image,
        name=name,
        bucket=bucket,
        bundle=bundle.keys,
        bundle_dir=IMAGE_BUNDLE_DIR,
        build_timeout=BUILD_TIMEOUT_SECONDS,
        test_timeout=TEST_TIMEOUT_SECONDS,
    )
