"""A bake rehearsal, for real: templates/image/build.sh (the file the Image Builder component
runs) bakes a Debian root made by mmdebstrap (.ci/image-chroot), its internet downloads served
from a file server on loopback: Slurm's real source tarball (Debian's orig tarball, verified
by .ci/slurm-source against Debian's signed index and the pin), configured, compiled and
installed by the build's own Slurm step (cached by recipe under /var/cache/slurmstack);
pyxis' source tarball by sha256; enroot's and efs-utils' git repositories by commit, enroot's
with a submodule, stand-ins this test builds (tests/image/git_sources.py); so download,
checksum or commit check, build and install execute; it runs twice (the second run changes
nothing); the image's test phase passes (slurmd -V is the pin; the built srun lists
--container-image from the plugin built against the built spank.h); then the node's boot
steps that check the image run in it with apt and dpkg replaced by tripwires.

Debian, not Ubuntu, is what is reachable here. The differences are the settings in
REHEARSAL_DIFFERENCES, each with its reason; everything else is the image's own settings
(slurmstack.render.image.build_env)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from apt_sources import (
    efa_installer,
    grafana_package,
    lustre_module,
    parent_dcgm,
    signed_repository,
)
from git_sources import GitSource, efs_utils_source, enroot_source

from slurmstack import contract, render, slurm_releases
from slurmstack.plan import ImageKind, images
from slurmstack.render import image as build
from support import slurm_cache
from support.examples import example_plan

pytestmark = pytest.mark.image

REPO = Path(__file__).resolve().parents[2]
CHROOT_SCRIPT = REPO / ".ci/image-chroot"
SOURCE_SCRIPT = REPO / ".ci/slurm-source"
CACHE = Path("/var/cache/slurmstack")
BUILD_SCRIPT = REPO / "templates/image/build.sh"
IN_ROOT = contract.IMAGE_BUNDLE_DIR
ENROOT = images.image_pins()["enroot"]["version"]
EFS_UTILS = images.image_pins()["efs_utils"]["version"]
PYXIS = images.image_pins()["pyxis"]["version"]
# The Slurm the rehearsal builds: the older leg's, the one pinned release whose source this
# workplace's Debian mirror serves (REHEARSAL_DIFFERENCES, "SLURM_...").
SLURM = "24.11.5"
EFA_INSTALLER = images.image_pins()["efa_installer"]["version"]

# What the rehearsal sets differently from the Ubuntu image, and why.
REHEARSAL_DIFFERENCES = {
    "SLURM_VERSION, SLURM_URL, SLURM_SHA256": "the rehearsal builds the pinned 24.11.5 (the "
    "older leg), served on loopback: the version of record's tarball (26.05.5) is listed in "
    "Debian's signed index with the pinned sha256, but this workplace's mirror does not serve "
    "it; same build function, same checks, same pin check of slurmd -V",
    "LUSTRE=skip": "the FSx repository builds the client for Ubuntu's AWS kernels only, and a "
    "chroot has no kernel of its own",
    "KERNEL_HOLD=no": "same reason: there is no kernel package in the root to hold",
    "BUILD_PACKAGES": "the stand-in sources build with gcc, make, git and cargo only (no aws-lc: "
    "no Go, CMake or Perl)",
    "ENROOT_REPOSITORY, ENROOT_COMMIT, EFS_UTILS_REPOSITORY, EFS_UTILS_COMMIT, PYXIS_URL, "
    "PYXIS_SHA256": "no internet: stand-in sources this test builds, served on loopback, with "
    "their real commits and checksums",
    "MOUNTPOINT_S3=skip": "AWS's Mountpoint for S3 release package is a download from AWS (no "
    "internet here); its signature check is the unit tests' (test_image_pins)",
    "CONTRACT": "less mount.lustre and lctl (the client skipped above) and mount-s3 (skipped above)",
    "GRAFANA_VERSION=''": "Grafana Labs' repository cannot be reached here: the Grafana section "
    "is rehearsed on its own against a stand-in signed repository "
    "(test_grafana_comes_from_its_signed_repository_at_the_pinned_version)",
    "EFA_INSTALLER_URL, EFA_INSTALLER_SHA256": "AWS's EFA installer builds its kernel module and "
    "installs Ubuntu and Amazon Linux packages only: a stand-in tarball of its layout "
    "(tests/image/apt_sources.py), served on loopback with its own sha256, puts Open MPI's "
    "mpicc and libfabric's fi_info where the installer does (/opt/amazon); fetch, checksum, "
    "extraction, efa_installer.sh -y and the test phase's checks run as on an image",
}
# The root carries the build tools already (so its apt step runs offline); the parent the bake
# records (build.sh `parent`: its packages, which are never removed, and its files of no
# package) is that root without them, as the bake would find a parent that never had them.
STAND_IN_PARENT = "the root less the build tools and what only they need (stand_in_parent)"
SKIPPED_CONTRACT = {"cmd:mount.lustre", "cmd:lctl", "cmd:mount-s3"}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def need(condition: bool, why: str) -> None:
    if not condition:
        if in_ci():
            pytest.fail(f"CI=true but {why}")
        pytest.skip(why)


# --- the artifacts the file server holds ------------------------------------------------------


STAND_IN_PLUGIN = r"""
/* pyxis stand-in: a SPANK plugin with pyxis' --container-image option, built by the image's
   build script against the installed Slurm's spank.h. */
#include <stddef.h>
#include <slurm/spank.h>

SPANK_PLUGIN(pyxis, 1);

static int container_image(int val, const char *optarg, int remote) { return 0; }

int slurm_spank_init(spank_t sp, int ac, char **av) { return ESPANK_SUCCESS; }

struct spank_option spank_options[] = {
    {"container-image", "[USER@][REGISTRY#]IMAGE[:TAG]|PATH",
     "[pyxis] the container image to run the job in", 1, 0, container_image},
    SPANK_OPTIONS_TABLE_END
};
"""
STAND_IN_MAKEFILE = """\
prefix ?= /usr/local
libdir = $(prefix)/lib

all: spank_pyxis.so

spank_pyxis.so: spank_pyxis.c
\t$(CC) -Wall -Werror -shared -fPIC -o $@ $<

install: spank_pyxis.so
\tinstall -d $(DESTDIR)$(libdir)/slurm
\tinstall -m 0755 spank_pyxis.so $(DESTDIR)$(libdir)/slurm/spank_pyxis.so
"""


def build_artifacts(out: Path, tmp: Path, url: str) -> dict[str, Path | GitSource]:
    source = tmp / f"pyxis-{PYXIS}"
    source.mkdir()
    (source / "spank_pyxis.c").write_text(STAND_IN_PLUGIN)
    (source / "Makefile").write_text(STAND_IN_MAKEFILE)
    tarball = out / f"v{PYXIS}.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(source, arcname=f"pyxis-{PYXIS}")
    return {
        "pyxis": tarball,
        "efa_installer": efa_installer(tmp / "efa", out, EFA_INSTALLER),
        "enroot": enroot_source(tmp, out, url, ENROOT),
        "efs_utils": efs_utils_source(tmp, out, url, EFS_UTILS),
    }


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    served: list[str]

    def log_message(self, format: str, *args: object) -> None:
        self.served.append(self.path)


@dataclass
class FileServer:
    url: str
    served: list[str]


@contextlib.contextmanager
def serve(root: Path, files: dict[str, Path] | None = None) -> Iterator[FileServer]:
    """A file server of ``root`` on loopback (an ephemeral port), stopped on exit; ``files``
    are linked into it first."""
    for name, path in (files or {}).items():
        (root / name).symlink_to(path)
    served: list[str] = []
    handler = functools.partial(
        type("Handler", (QuietHandler,), {"served": served}), directory=str(root)
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FileServer(f"http://127.0.0.1:{server.server_address[1]}", served)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


Artifacts = dict[str, Path | GitSource]


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[tuple[FileServer, Artifacts]]:
    """A file server on loopback (an ephemeral port), stopped in teardown."""
    root = tmp_path / "www"
    root.mkdir()
    with serve(root) as server:
        (tmp_path / "sources").mkdir()
        yield server, build_artifacts(root, tmp_path / "sources", server.url)


# --- the root, and running in it -----------------------------------------------------------


REHEARSAL_BUILD_PACKAGES = "BUILD_PACKAGES='build-essential git cargo'"


def rehearsal_image() -> images.ImagePlan:
    plan = example_plan("cpu-hpc")
    (image,) = [i for i in images.image_plans(plan) if i.kind is ImageKind.CPU]
    return image


def settings_value(settings: str, key: str) -> str:
    match = re.search(rf"^{key}='([^']*)'$", settings, re.M)
    assert match, key
    return match.group(1)


def rehearsal_packages(settings: str) -> list[str]:
    apt = settings_value(settings, "APT_PACKAGES").split()
    build = settings_value(REHEARSAL_BUILD_PACKAGES, "BUILD_PACKAGES").split()
    build += images.image_pins()["packages"]["slurm_build"]
    # The stand-in sources: cloned with git, efs-proxy built by cargo, enroot's helper given
    # capabilities (setcap), the efs-utils .deb's dependencies installed from the root.
    sources = ["git", "cargo", "stunnel4", "openssl"]
    # python3 for the bootstrap and the agent; systemd so the unit steps run as on an image;
    # gpg, as Ubuntu's images carry it, for the FSx repository's key.
    return sorted({*apt, *build, *sources, "python3", "systemd", "gpg"})


@pytest.fixture(scope="module")
def base_root() -> Path:
    need(os.geteuid() == 0, "the rehearsal needs root (chroot, mounts)")
    need(shutil.which("mmdebstrap") is not None, "mmdebstrap is missing (apt: mmdebstrap)")
    need(shutil.which("unshare") is not None, "unshare is missing (apt: util-linux)")
    need(shutil.which("dpkg-deb") is not None, "dpkg-deb is missing")
    packages = rehearsal_packages(build.build_env(rehearsal_image()))
    out = subprocess.run(
        [str(CHROOT_SCRIPT), ",".join(packages)], capture_output=True, text=True, timeout=1800
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return Path(out.stdout.strip().splitlines()[-1])


@dataclass
class Rooted:
    """An overlay of the cached root: what a run writes lands in ``upper``."""

    lower: str  # overlayfs lowerdir: the cached layers, top first
    upper: Path
    work: Path
    merged: Path

    def lower_path(self, path: str) -> Path:
        """``path`` in the top lower layer that has it (the cached Slurm layer first)."""
        for layer in self.lower.split(":"):
            if (Path(layer) / path).exists():
                return Path(layer) / path
        return Path(self.lower.split(":")[-1]) / path

    def run(self, script: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """``script`` (bash) as root in the overlay, in a mount namespace of its own (its mounts
        vanish with it), sharing this machine's network (the file server on loopback)."""
        mounts = (
            f"mount -t overlay overlay -o lowerdir={self.lower},upperdir={self.upper},"
            f"workdir={self.work} {self.merged} && mount -t proc proc {self.merged}/proc && "
            f"mount --rbind /dev {self.merged}/dev && "
        )
        command = mounts + f"exec chroot {self.merged} /bin/bash -c {shq(script)}"
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "--fork", "sh", "-c", command],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={
                "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "LANG": "C.UTF-8",
            },
        )


def shq(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _rooted(lower: str, directory: Path) -> Rooted:
    parts = {name: directory / name for name in ("upper", "work", "merged")}
    for path in parts.values():
        path.mkdir(parents=True)
    return Rooted(lower=lower, **parts)


@pytest.fixture(scope="module")
def slurm_tarball() -> Path:
    out = subprocess.run([str(SOURCE_SCRIPT), SLURM], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def slurm_layer(
    base_root: Path, slurm_tarball: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """What `build.sh slurm` writes into the base root that is Slurm's own (its build, units,
    directories and stamp), built once per compile recipe and kept under /var/cache/slurmstack
    (slurm_cache): the image's own build of the pinned source, its tarball served on loopback."""
    pin = slurm_releases.source(SLURM)
    assert pin is not None
    layer = slurm_cache.layer_path(CACHE, SLURM, pin.sha256, BUILD_SCRIPT, base_root)
    if slurm_cache.is_built(layer, SLURM):
        return layer
    rooted = _rooted(str(base_root), tmp_path_factory.mktemp("slurm-build"))
    with serve(tmp_path_factory.mktemp("slurm-www"), {slurm_tarball.name: slurm_tarball}) as server:
        stage_bundle(rooted, slurm_settings(server.url, slurm_tarball))
        built = rooted.run(f"bash {IN_ROOT}/build.sh slurm {IN_ROOT}/image.env", timeout=5400)
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-5000:]
        assert f"download: slurm-{SLURM}.tar.gz fetched, checksum ok" in built.stderr
        assert server.served == [f"/{slurm_tarball.name}"]
    shutil.rmtree(rooted.upper / IN_ROOT.lstrip("/"))
    slurm_cache.store(rooted.upper, layer, SLURM)
    return layer


def slurm_settings(url: str, tarball: Path) -> str:
    settings = build.build_env(rehearsal_image())
    values = {
        "SLURM_VERSION": SLURM,
        "SLURM_URL": f"{url}/{tarball.name}",
        "SLURM_SHA256": hashlib.sha256(tarball.read_bytes()).hexdigest(),
    }
    for key, value in values.items():
        settings, count = re.subn(rf"^{key}='[^']*'$", f"{key}='{value}'", settings, flags=re.M)
        assert count == 1, key
    return settings


PARENT_RECORDS = ("parent-packages", "parent-files")
# As build.sh's autoremovable(): dependencies only (the image installs without recommends).
AUTOREMOVE = (
    "-o APT::AutoRemove::RecommendsImportant=false -o APT::AutoRemove::SuggestsImportant=false"
)
STATE = "var/lib/slurmstack/image"


@pytest.fixture(scope="module")
def stand_in_parent(base_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """build.sh's parent records (STAND_IN_PARENT): in a scratch overlay of the root, the build
    tools marked as installed automatically and apt's autoremove run (what the bake's own
    removal does), then `build.sh parent`."""
    scratch_dir = tmp_path_factory.mktemp("parent")
    parts = {name: scratch_dir / name for name in ("upper", "work", "merged")}
    for path in parts.values():
        path.mkdir()
    scratch = Rooted(lower=str(base_root), **parts)
    settings = build.build_env(rehearsal_image())
    settings = re.sub(r"^BUILD_PACKAGES='[^']*'$", REHEARSAL_BUILD_PACKAGES, settings, flags=re.M)
    stage_bundle(scratch, settings)
    apt = set(settings_value(settings, "APT_PACKAGES").split())
    tools = [t for t in settings_value(settings, "BUILD_PACKAGES").split() if t not in apt]
    out = scratch.run(
        f"apt-mark auto {' '.join(tools)} >/dev/null && apt-get -y -q {AUTOREMOVE} autoremove --purge "
        f">/dev/null && bash {IN_ROOT}/build.sh parent {IN_ROOT}/image.env {IN_ROOT}"
    )
    assert out.returncode == 0, out.stderr[-3000:]
    records = {name: (scratch.upper / STATE / name).read_text() for name in PARENT_RECORDS}
    for tool in tools:
        assert tool not in records["parent-packages"].split(), tool
    return records


@pytest.fixture
def rooted(
    base_root: Path, slurm_layer: Path, tmp_path: Path, stand_in_parent: dict[str, str]
) -> Rooted:
    """The base root with the cached Slurm layer above it (what `build.sh slurm` wrote: the
    bake finds its stamp) and the stand-in parent's records, taken from the base root alone,
    so the Slurm build's tools are the bake's to remove."""
    rooted = _rooted(f"{slurm_layer}:{base_root}", tmp_path)
    state = rooted.upper / STATE
    state.mkdir(parents=True)
    for name, text in stand_in_parent.items():
        (state / name).write_text(text)
    return rooted


def chroot_version(rooted: Rooted, package: str) -> str:
    out = rooted.run(f"dpkg-query -W -f='${{Version}}' {package}")
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def rehearsal_settings(rooted: Rooted, server: FileServer, artifacts: Artifacts) -> str:
    settings = build.build_env(rehearsal_image())

    def sha(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    pyxis, enroot, efs = artifacts["pyxis"], artifacts["enroot"], artifacts["efs_utils"]
    efa = artifacts["efa_installer"]
    assert isinstance(pyxis, Path) and isinstance(efa, Path)
    assert isinstance(enroot, GitSource) and isinstance(efs, GitSource)
    items = [c for c in settings_value(settings, "CONTRACT").split() if c not in SKIPPED_CONTRACT]
    pin = slurm_releases.source(SLURM)
    assert pin is not None
    overrides = {
        # The cached Slurm layer's build (slurm_layer): the same values, so the stamp matches.
        "SLURM_VERSION": SLURM,
        "SLURM_URL": f"{server.url}/slurm-wlm_{SLURM}.orig.tar.gz",
        "SLURM_SHA256": pin.sha256,
        "LUSTRE": "skip",
        "MOUNTPOINT_S3": "skip",
        "KERNEL_HOLD": "no",
        "BUILD_PACKAGES": settings_value(REHEARSAL_BUILD_PACKAGES, "BUILD_PACKAGES"),
        "ENROOT_REPOSITORY": enroot.url,
        "ENROOT_COMMIT": enroot.commit,
        "EFS_UTILS_REPOSITORY": efs.url,
        "EFS_UTILS_COMMIT": efs.commit,
        "PYXIS_URL": f"{server.url}/{pyxis.name}",
        "PYXIS_SHA256": sha(pyxis),
        "EFA_INSTALLER_URL": f"{server.url}/{efa.name}",
        "EFA_INSTALLER_SHA256": sha(efa),
        "CONTRACT": " ".join(items),
        "GRAFANA_VERSION": "",
    }
    for key, value in overrides.items():
        settings, count = re.subn(rf"^{key}='[^']*'$", f"{key}='{value}'", settings, flags=re.M)
        assert count == 1, key
    return settings


def stage_bundle(rooted: Rooted, settings: str) -> None:
    bundle = rooted.upper / IN_ROOT.lstrip("/")
    bundle.mkdir(parents=True)
    shutil.copyfile(BUILD_SCRIPT, bundle / "build.sh")  # the very file the component runs
    (bundle / "image.env").write_text(settings)
    (bundle / build.AGENT_ARCHIVE).write_bytes(build.agent_archive())


BUILD = f"bash {IN_ROOT}/build.sh build {IN_ROOT}/image.env {IN_ROOT}"
TEST = f"bash {IN_ROOT}/build.sh test {IN_ROOT}/image.env {IN_ROOT}"
# What a second run must not do: anything but report what is there.
CHANGES = re.compile(
    r"apt: installing|fetched|cloned |built from |installed [0-9a-f]{64}|held |disabled |wrote "
    r"|masked "
)


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file the runs wrote (the overlay's upper layer), logs aside."""
    out = {}
    for path in root.rglob("*"):
        relative = str(path.relative_to(root))
        if path.is_file() and not relative.startswith(("var/log", "tmp", "var/cache")):
            stat = path.stat()
            out[relative] = (stat.st_size, stat.st_mtime_ns)
    return out


def test_the_build_script_bakes_a_debian_root_twice_and_its_tests_pass(
    rooted: Rooted, file_server: tuple[FileServer, Artifacts]
) -> None:
    server, artifacts = file_server
    stage_bundle(rooted, rehearsal_settings(rooted, server, artifacts))

    first = rooted.run(BUILD)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-4000:]
    log = first.stderr
    # Downloaded and verified, built, installed.
    assert f"download: pyxis-{PYXIS}.tar.gz fetched, checksum ok" in log
    # The EFA installer, by its sha256, run as on Ubuntu: Open MPI and libfabric in /opt/amazon.
    assert f"download: aws-efa-installer-{EFA_INSTALLER}.tar.gz fetched, checksum ok" in log
    assert f"efa installer: {EFA_INSTALLER} installed (libfabric /opt/amazon/efa" in log
    enroot, efs = artifacts["enroot"], artifacts["efs_utils"]
    assert isinstance(enroot, GitSource) and isinstance(efs, GitSource)
    for name, source in (("enroot", enroot), ("efs-utils", efs)):
        assert (
            f"{name}: cloned {source.url}, tag {source.tag} is the pinned commit {source.commit}"
        ) in log
    assert f"enroot: {ENROOT} built from {enroot.commit}" in log
    assert f"efs-utils: {EFS_UTILS} built from {efs.commit}" in log
    # enroot's submodule came from the server too, at the commit the tag records.
    assert any(path.startswith("/enroot-deps.git/") for path in server.served)
    assert "held munge" in log
    assert f"slurm: {SLURM} already built" in log  # the cached layer: build.sh's own stamp
    assert "parent: " in log and "packages recorded before the first install" in log
    # The build tools went last, with what only they needed; the image's own stayed (gcc for
    # mpicc, perl for MariaDB), and so did every binary of a held package's source.
    assert log.index("build tools: removed") > log.index(f"efs-utils: {EFS_UTILS} built from")
    assert log.index("build tools: removed") > log.index("agent: installed")
    tools = settings_value(REHEARSAL_BUILD_PACKAGES, "BUILD_PACKAGES").split()
    status = rooted.run(
        "dpkg-query -W -f='${db:Status-Status} ${Package}\\n' "
        + " ".join([*tools, "rustc", "make", "g++", "gcc", "libmunge2", "munge"])
        + " 2>/dev/null || true"
    ).stdout
    installed = {line.split()[1] for line in status.splitlines() if line.startswith("installed ")}
    assert installed.isdisjoint({*tools, "rustc", "make", "g++"}), installed
    assert {"gcc", "munge", "libmunge2"} <= installed, installed
    assert not (rooted.upper / "usr/local/src/slurmstack").exists()
    held = rooted.run("apt-mark showhold").stdout.split()
    assert {"munge", "libmunge2"} <= set(held), held
    assert "lustre: skipped (LUSTRE=skip)" in log
    # apt's timers and unattended-upgrades are masked before apt's first step, not after.
    for unit in ("apt-daily.timer", "apt-daily-upgrade.timer", "unattended-upgrades.service"):
        assert log.index(f"apt: stopped and masked {unit}") < log.index("apt: all"), unit
        link = rooted.upper / "etc/systemd/system" / unit
        assert link.is_symlink() and os.readlink(link) == "/dev/null", unit
    assert (rooted.upper / "etc/apt/apt.conf.d/99slurmstack-no-periodic").is_file()
    # The head's accounting daemons are baked (a CPU image may boot the head) and left off:
    # the head's agent starts them when its definition asks.
    assert "units: disabled mariadb.service" in log  # Debian's package enabled it
    # Slurm's own units, installed by the Slurm build and never enabled.
    merged = rooted.upper
    for unit in ("slurmctld", "slurmd", "slurmdbd", "sackd", "slurmrestd"):
        assert (rooted.lower_path("usr/lib/systemd/system") / f"{unit}.service").is_file(), unit
        assert not list(merged.glob(f"etc/systemd/system/*.wants/{unit}.service")), unit
    merged_like = rooted.upper
    assert (merged_like / contract.PYXIS_PLUGIN.lstrip("/")).is_file()
    assert (merged_like / contract.AGENT_PATH.lstrip("/")).is_file()
    assert (merged_like / contract.BOOTSTRAP_PATH.lstrip("/")).is_file()
    manifest = (merged_like / contract.IMAGE_MANIFEST_PATH.lstrip("/")).read_text()
    assert f'"enroot": "{ENROOT}"' in manifest and f'"pyxis": "{PYXIS}"' in manifest
    assert f'"efs_utils": "{EFS_UTILS}-1"' in manifest
    assert f'"slurm": "{SLURM}"' in manifest and f'"slurmdbd": "{SLURM}"' in manifest, manifest
    assert '"mariadb": ""' not in manifest

    # Idempotent: the second run finds everything done, downloads and writes nothing.
    served_before, state_before = len(server.served), tree_state(rooted.upper)
    second = rooted.run(BUILD)
    assert second.returncode == 0, second.stderr[-4000:]
    assert not CHANGES.search(second.stderr), second.stderr
    for step in (
        "apt: all",
        f"enroot: {ENROOT} already installed",
        f"efs-utils: {EFS_UTILS} already installed",
        f"pyxis: {PYXIS} already built",
        f"slurm: {SLURM} already built",
        f"efa installer: {EFA_INSTALLER} already installed",
        "agent: ",
        "manifest: /etc/slurmstack/image.json unchanged",
        "build tools: none installed",
    ):
        assert step in second.stderr, step
    assert len(server.served) == served_before
    assert tree_state(rooted.upper) == state_before

    # The image's test phase: every piece, Debian's real srun loading the built plugin.
    tested = rooted.run(TEST)
    assert tested.returncode == 0, tested.stdout + tested.stderr[-3000:]
    results = dict(
        (line.split()[1].rstrip(":"), line.split()[0])
        for line in tested.stdout.splitlines()
        if line.split()[:1] in (["ok"], ["FAIL"])
    )
    pieces = ("slurm", "slurm-plugins", "munge", "pmix", "nftables", "enroot", "enroot-caps")
    pieces += ("efs-utils", "pyxis", "agent", "mpi", "libfabric", "build-tools-removed")
    pieces += ("sources-held",)
    for piece in (*pieces, "contract"):
        assert results.get(piece) == "ok", (piece, tested.stdout)
    # slurmd -V is the pin: SchedMD's build says "slurm X".
    assert re.search(
        rf"^ok\s+slurm: slurm {re.escape(SLURM)} \(slurmd slurmctld slurmrestd; slurmdbd",
        tested.stdout,
        re.M,
    ), tested.stdout
    assert "srun --help lists --container-image" in tested.stdout
    built = re.search(
        r"^ok\s+build-tools-removed: .*; (\d+) built files load all", tested.stdout, re.M
    )
    assert built and int(built.group(1)) > 0, tested.stdout  # pyxis' plugin, enroot's helpers
    assert re.search(
        r"^ok\s+sources-held: held with their sources: .*libmunge2=", tested.stdout, re.M
    )
    # enroot's helper was built (against its submodule) and given its capability (make setcap).
    assert "enroot-caps: /usr/bin/enroot-mksquashovlfs cap_sys_admin=ep" in tested.stdout


def test_the_test_phase_fails_an_image_missing_a_piece(
    rooted: Rooted, file_server: tuple[FileServer, Artifacts]
) -> None:
    """The test phase can fail: the same root without the pyxis plugin."""
    server, artifacts = file_server
    stage_bundle(rooted, rehearsal_settings(rooted, server, artifacts))
    assert rooted.run(BUILD).returncode == 0
    broken = rooted.run(f"rm {contract.PYXIS_PLUGIN} && {TEST}")
    assert broken.returncode != 0
    assert re.search(r"^FAIL\s+pyxis:", broken.stdout, re.M), broken.stdout
    assert "image cpu-x86-64 failed its tests" in broken.stderr


TRIPWIRE = """#!/bin/sh
echo "$0 $*" >> /var/lib/slurmstack/tripwire
exit 97
"""


def test_the_node_boots_from_the_baked_root_with_no_apt(
    rooted: Rooted, file_server: tuple[FileServer, Artifacts]
) -> None:
    """After the bake, the boot's image steps in that root: the bootstrap's contract check (as
    cloud-init runs it for a pool of the example) and the baked agent, with apt-get, apt and
    dpkg replaced by tripwires first on PATH. The unbaked root fails the same check, naming
    what it lacks."""
    server, artifacts = file_server
    stage_bundle(rooted, rehearsal_settings(rooted, server, artifacts))
    plan = example_plan("cpu-hpc")
    items = [c for c in images.role_image_contract(plan, "batch") if c not in SKIPPED_CONTRACT]
    check = "slurmstack-bootstrap check " + " ".join(items)

    # The bootstrap as cloud-init writes it (write_files), on the root before the bake.
    bootstrap = rooted.upper / contract.BOOTSTRAP_PATH.lstrip("/")
    bootstrap.parent.mkdir(parents=True)
    bootstrap.write_text(render.bootstrap_source())
    bootstrap.chmod(0o755)
    unbaked = rooted.run(check)
    assert unbaked.returncode == 1
    assert "the image lacks cmd:enroot, file:/usr/local/lib/slurm/spank_pyxis.so" in (
        unbaked.stderr
    ), unbaked.stderr

    assert rooted.run(BUILD).returncode == 0
    wires = " && ".join(
        f"printf %s {shq(TRIPWIRE)} > /usr/local/sbin/{tool} && chmod 755 /usr/local/sbin/{tool}"
        for tool in ("apt-get", "apt", "dpkg")
    )
    booted = rooted.run(f"{wires} && {check} && slurmstack-node --help >/dev/null && echo booted")
    assert booted.returncode == 0, booted.stdout + booted.stderr
    assert "image contract met" in booted.stderr and "booted" in booted.stdout
    assert not (rooted.upper / "var/lib/slurmstack/tripwire").exists()
    # The same check on a root that lacks a piece fails and says which (no apt either).
    missing = rooted.run(f"{wires} && rm /usr/bin/enroot && {check}")
    assert missing.returncode == 1
    assert "the image lacks cmd:enroot" in missing.stderr
    assert not (rooted.upper / "var/lib/slurmstack/tripwire").exists()


def test_every_difference_from_the_image_is_named() -> None:
    """The overrides above and the named differences agree (a new override needs a reason)."""
    named = {k.split("=")[0] for key in REHEARSAL_DIFFERENCES for k in key.split(", ")}
    source = Path(__file__).read_text()
    start = source.index("    overrides = {")
    block = source[start : source.index("    for key, value in", start)]
    overridden = set(re.findall(r'^\s+"([A-Z_0-9]+)":', block, re.M))
    assert overridden == named


FAKE_UNAME = """#!/bin/sh
# The kernel the build instance runs, as the parent image would report it.
if [ "$1" = -r ]; then echo 6.8.0-1010-aws; else exec /bin/uname "$@"; fi
"""


def test_the_bake_refuses_an_image_that_would_boot_another_kernel(
    rooted: Rooted, file_server: tuple[FileServer, Artifacts]
) -> None:
    """KERNEL_HOLD=yes (the images' setting): the bake checks that the kernel the image boots
    (the newest in /boot) is the one it ran on, which the Lustre client is built for. A kernel
    that appeared during the bake fails it, naming both."""
    server, artifacts = file_server
    settings = rehearsal_settings(rooted, server, artifacts)
    settings = re.sub(r"^KERNEL_HOLD='no'$", "KERNEL_HOLD='yes'", settings, flags=re.M)
    stage_bundle(rooted, settings)
    uname = rooted.upper / "usr/local/bin/uname"
    uname.parent.mkdir(parents=True, exist_ok=True)
    uname.write_text(FAKE_UNAME)
    uname.chmod(0o755)
    boot = rooted.upper / "boot"
    boot.mkdir(exist_ok=True)
    (boot / "vmlinuz-6.8.0-1010-aws").write_text("")
    (boot / "vmlinuz-6.8.0-1009-aws").write_text("")
    same = rooted.run(BUILD)
    assert same.returncode == 0, same.stderr[-3000:]
    assert "kernel: boots 6.8.0-1010-aws, the Lustre client's" in same.stderr
    (boot / "vmlinuz-6.8.0-1012-aws").write_text("")
    newer = rooted.run(BUILD)
    assert newer.returncode != 0
    assert (
        "kernel: the image would boot 6.8.0-1012-aws, but its Lustre client is built for "
        "6.8.0-1010-aws" in newer.stderr
    ), newer.stderr[-2000:]


def fake_uname(rooted: Rooted, kernel: str) -> None:
    uname = rooted.upper / "usr/local/bin/uname"
    uname.parent.mkdir(parents=True, exist_ok=True)
    uname.write_text(FAKE_UNAME.replace("6.8.0-1010-aws", kernel))
    uname.chmod(0o755)


def with_settings(settings: str, **values: str) -> str:
    for key, value in values.items():
        settings, count = re.subn(rf"^{key}='[^']*'$", f"{key}='{value}'", settings, flags=re.M)
        assert count == 1, key
    return settings


def test_a_parent_whose_kernel_has_no_lustre_client_fails_at_the_start(
    rooted: Rooted, file_server: tuple[FileServer, Artifacts], tmp_path: Path
) -> None:
    """LUSTRE=fsx against a stand-in FSx repository (signed, on loopback) that has the client
    for an older kernel only: the bake stops before its first install, saying which kernel
    and what to do."""
    server, artifacts = file_server
    older = lustre_module(tmp_path / "debs", "6.8.0-1009-aws")
    repo = signed_repository(tmp_path / "repo", tmp_path / "www", server.url, [older])
    settings = rehearsal_settings(rooted, server, artifacts)
    stage_bundle(
        rooted,
        with_settings(
            settings, LUSTRE="fsx", LUSTRE_REPOSITORY=repo.url, LUSTRE_KEY_URL=repo.key_url
        ),
    )
    fake_uname(rooted, "6.8.0-1012-aws")
    out = rooted.run(BUILD)
    assert out.returncode != 0
    assert (
        "FAILED: the parent image's kernel 6.8.0-1012-aws has no FSx for Lustre client module "
        "yet (no lustre-client-modules-6.8.0-1012-aws in the FSx repository): pin the parent to "
        "an earlier image (image.parents) or build again once AWS publishes the module"
    ) in out.stderr, out.stderr[-3000:]
    # apt read the signed index (the key fetched, InRelease checked) ...
    assert "/fsx-key.asc" in server.served and "/fsx/dists/bookworm/InRelease" in server.served
    # ... and that was all: nothing was installed, fetched or built.
    for later in ("apt: all", "apt: installing", "enroot:", "pyxis", "build tools"):
        assert later not in out.stderr, later


def test_a_gpu_parent_keeps_its_dcgm_and_gets_the_lustre_client_of_its_kernel(
    rooted: Rooted, file_server: tuple[FileServer, Artifacts], tmp_path: Path
) -> None:
    """A parent like the Deep Learning Base AMI: its own DCGM installed (a stand-in .deb of
    the name build.sh looks for), the image's DCGM package set as on an NVIDIA image; an FSx
    repository with the client for the parent's kernel. The bake uses the parent's DCGM (the
    image's package is not in Debian: asking apt for it would fail the bake), installs the
    client from the signed repository and holds it."""
    server, artifacts = file_server
    modules = [lustre_module(tmp_path / "debs", k) for k in ("6.8.0-1009-aws", "6.8.0-1010-aws")]
    repo = signed_repository(tmp_path / "repo", tmp_path / "www", server.url, modules)
    dcgm = parent_dcgm(tmp_path / "debs")
    # Staged outside /tmp: a /tmp made in the overlay's upper layer would hide the root's
    # sticky, world-writable one (apt's unprivileged gpgv writes there).
    staged = rooted.upper / "var/cache/parent-debs"
    staged.mkdir(parents=True)
    shutil.copyfile(dcgm, staged / dcgm.name)
    assert rooted.run(f"dpkg -i /var/cache/parent-debs/{dcgm.name} >/dev/null").returncode == 0
    image_dcgm = images.image_pins()["dcgm"]["package"]
    settings = with_settings(
        rehearsal_settings(rooted, server, artifacts),
        LUSTRE="fsx",
        LUSTRE_REPOSITORY=repo.url,
        LUSTRE_KEY_URL=repo.key_url,
        DCGM_PACKAGE=image_dcgm,
    )
    stage_bundle(rooted, settings)
    fake_uname(rooted, "6.8.0-1010-aws")
    out = rooted.run(BUILD)
    assert out.returncode == 0, out.stderr[-4000:]
    log = out.stderr
    assert "lustre: the FSx repository has lustre-client-modules-6.8.0-1010-aws 2.15.6-1fsx1" in log
    assert log.index("lustre: the FSx repository has") < log.index("apt: all")
    assert "held lustre-client-modules-6.8.0-1010-aws 2.15.6-1fsx1" in log
    assert "dcgm: datacenter-gpu-manager 1:3.3.9 already installed" in log
    listed = rooted.run(
        "dpkg-query -W -f='${db:Status-Status} ${Package}\\n' 'datacenter-gpu-manager*'"
    )
    dcgms = [
        line.split()[1] for line in listed.stdout.splitlines() if line.startswith("installed ")
    ]
    assert dcgms == ["datacenter-gpu-manager"], listed.stdout  # one DCGM: the parent's
    manifest = json.loads((rooted.upper / contract.IMAGE_MANIFEST_PATH.lstrip("/")).read_text())
    assert manifest["dcgm"] == "datacenter-gpu-manager 1:3.3.9"
    assert manifest["lustre_client"] == "2.15.6-1fsx1"
    assert re.fullmatch(r"[0-9A-F]{40}", manifest["lustre_key"]), manifest  # the key it trusted
    tested = rooted.run(TEST)
    assert re.search(r"^ok\s+dcgm: dcgmi  version: 3\.3\.9", tested.stdout, re.M), tested.stdout


def test_grafana_comes_from_its_signed_repository_at_the_pinned_version(
    rooted: Rooted, file_server: tuple[FileServer, Artifacts], tmp_path: Path
) -> None:
    """The Grafana section against a stand-in of Grafana Labs' repository (signed, on loopback)
    holding the pinned version and a newer one: the bake installs exactly the pinned one,
    holds it, leaves its unit off and no repository list behind, records the key it trusted;
    the test phase checks the program. A recorded fingerprint that is not the repository's
    key stops the bake before anything is installed from it."""
    server, artifacts = file_server
    pinned = images.image_pins()["grafana"]["version"]
    assert build.build_env(rehearsal_image()).count(f"GRAFANA_VERSION='{pinned}'") == 1
    debs = [grafana_package(tmp_path / "debs", v) for v in (pinned, "99.0.0")]
    repo = signed_repository(tmp_path / "repo", tmp_path / "www", server.url, debs, "grafana")
    settings = with_settings(
        rehearsal_settings(rooted, server, artifacts),
        GRAFANA_VERSION=pinned,
        GRAFANA_REPOSITORY=repo.url,
        GRAFANA_SUITE="bookworm",
        GRAFANA_KEY_URL=repo.key_url,
        # The stand-in's own key in the pinned one's place (image_pins.json records Grafana
        # Labs'): the bake checks a recorded fingerprint and goes on.
        GRAFANA_KEY_FINGERPRINT=repo.fingerprint,
    )
    stage_bundle(rooted, settings)
    out = rooted.run(BUILD)
    assert out.returncode == 0, out.stderr[-4000:]
    log = out.stderr
    assert f"grafana: {pinned} installed (repository key {repo.fingerprint})" in log
    assert f"held grafana {pinned}" in log
    assert chroot_version(rooted, "grafana") == pinned
    assert not (rooted.upper / "etc/apt/sources.list.d/slurmstack-grafana.list").exists()
    manifest = json.loads((rooted.upper / contract.IMAGE_MANIFEST_PATH.lstrip("/")).read_text())
    assert manifest["grafana"] == pinned
    assert manifest["grafana_key"] == repo.fingerprint, manifest
    tested = rooted.run(TEST)
    assert tested.returncode == 0, tested.stdout[-3000:]
    assert re.search(rf"^ok\s+grafana: grafana version {re.escape(pinned)}", tested.stdout, re.M)
    assert re.search(r"^ok\s+grafana-held: held: grafana", tested.stdout, re.M)
    # A second run changes nothing.
    again = rooted.run(BUILD)
    assert again.returncode == 0 and f"grafana: {pinned} already installed" in again.stderr
    # Another key than the recorded one: refused.
    other = "0" * 40
    stage_bundle_again = with_settings(settings, GRAFANA_KEY_FINGERPRINT=other)
    (rooted.upper / IN_ROOT.lstrip("/") / "image.env").write_text(stage_bundle_again)
    rooted.run(
        "dpkg --purge grafana >/dev/null 2>&1; rm -f /usr/share/keyrings/slurmstack-grafana.gpg"
    )
    refused = rooted.run(BUILD)
    assert refused.returncode != 0
    assert "the repository key is " in refused.stderr and f"not the pinned {other}; refused" in (
        refused.stderr
    )


def test_the_test_phase_fails_an_image_that_kept_its_build_sources(
    rooted: Rooted, file_server: tuple[FileServer, Artifacts]
) -> None:
    """The build-tools check can fail: the baked root with the sources directory back."""
    server, artifacts = file_server
    stage_bundle(rooted, rehearsal_settings(rooted, server, artifacts))
    assert rooted.run(BUILD).returncode == 0
    broken = rooted.run(f"mkdir -p /usr/local/src/slurmstack/pyxis && {TEST}")
    assert broken.returncode != 0
    assert re.search(
        r"^FAIL\s+build-tools-removed: /usr/local/src/slurmstack is still there",
        broken.stdout,
        re.M,
    ), broken.stdout
