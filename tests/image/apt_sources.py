"""Stand-ins for the package sources the rehearsal cannot reach: the FSx for Lustre client
repository (a signed apt repository the file server serves on loopback, with the
lustre-client-modules-<kernel> packages a test chooses), a parent image's own DCGM (a .deb
installed in the root before the bake, as the Deep Learning Base AMI carries one) and AWS's EFA
installer (a tarball of its layout, whose efa_installer.sh puts the two programs the image's
test phase runs where the real one puts them).

The repository has the shape build.sh relies on: a public key at its own address (armored, as
AWS publishes fsx-ubuntu-public-key.asc), and dists/<codename>/InRelease signed by it over a
Packages index of one component, main. What the packages hold is a stand-in; how they are
found, trusted and installed is apt's and build.sh's own code."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Debian 12, the rehearsal's root (.ci/image-chroot).
CODENAME = "bookworm"
ARCH = "amd64"


def deb(work: Path, package: str, version: str, files: dict[str, str], mode: int = 0o644) -> Path:
    """A binary package holding ``files`` (path -> text), built with dpkg-deb."""
    tree = work / f"{package}_{version}"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN/control").write_text(
        f"Package: {package}\nVersion: {version}\nArchitecture: {ARCH}\n"
        "Maintainer: rehearsal <rehearsal@example.invalid>\n"
        f"Description: rehearsal stand-in for {package}\n"
    )
    for path, text in files.items():
        target = tree / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)
    out = work / f"{package}_{version}_{ARCH}.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(out)],
        check=True,
        capture_output=True,
    )
    return out


@dataclass(frozen=True)
class AptRepository:
    url: str  # the repository, as the deb line names it
    key_url: str  # its public key, armored
    fingerprint: str  # that key's, as gpg prints it (40 hex digits, upper case)


def _control(package: Path) -> str:
    return subprocess.run(
        ["dpkg-deb", "--field", str(package)], check=True, capture_output=True, text=True
    ).stdout.strip()


def signed_repository(
    work: Path, www: Path, base_url: str, packages: list[Path], name: str = "fsx"
) -> AptRepository:
    """An apt repository under ``www/<name>`` holding ``packages``, its InRelease signed by a
    key made for it (in a GnuPG home of its own), the key under ``www/<name>-key.asc``."""
    root = www / name
    pool = root / "pool/main"
    pool.mkdir(parents=True)
    stanzas = []
    for package in packages:
        data = package.read_bytes()
        (pool / package.name).write_bytes(data)
        stanzas.append(
            f"{_control(package)}\nFilename: pool/main/{package.name}\nSize: {len(data)}\n"
            f"SHA256: {hashlib.sha256(data).hexdigest()}\n"
        )
    index = root / f"dists/{CODENAME}/main/binary-{ARCH}"
    index.mkdir(parents=True)
    text = "\n".join(stanzas).encode()
    (index / "Packages").write_bytes(text)
    (index / "Packages.gz").write_bytes(gzip.compress(text, mtime=0))
    lines = []
    for listing in ("Packages", "Packages.gz"):
        body = (index / listing).read_bytes()
        lines.append(
            f" {hashlib.sha256(body).hexdigest()} {len(body)} main/binary-{ARCH}/{listing}"
        )
    release = root / f"dists/{CODENAME}/Release"
    release.write_text(
        f"Origin: rehearsal\nSuite: {CODENAME}\nCodename: {CODENAME}\n"
        f"Date: Wed, 01 Jan 2025 00:00:00 UTC\nArchitectures: {ARCH}\nComponents: main\n"
        "SHA256:\n" + "\n".join(lines) + "\n"
    )
    home = work / "gnupg"
    home.mkdir(mode=0o700, parents=True)
    gpg = ["gpg", "--batch", "--homedir", str(home), "--pinentry-mode", "loopback"]
    subprocess.run(
        [*gpg, "--passphrase", "", "--quick-gen-key", "fsx-standin@example.invalid", "ed25519"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [*gpg, "--clearsign", "--output", str(release.with_name("InRelease")), str(release)],
        check=True,
        capture_output=True,
    )
    key = subprocess.run(
        [*gpg, "--armor", "--export", "fsx-standin@example.invalid"],
        check=True,
        capture_output=True,
    ).stdout
    (www / f"{name}-key.asc").write_bytes(key)
    listed = subprocess.run(
        [*gpg, "--with-colons", "--fingerprint", "fsx-standin@example.invalid"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    fingerprint = next(line.split(":")[9] for line in listed.splitlines() if line[:4] == "fpr:")
    return AptRepository(
        url=f"{base_url}/{name}", key_url=f"{base_url}/{name}-key.asc", fingerprint=fingerprint
    )


def lustre_module(work: Path, kernel: str) -> Path:
    """lustre-client-modules-<kernel>, holding a stand-in module for that kernel."""
    return deb(
        work,
        f"lustre-client-modules-{kernel}",
        "2.15.6-1fsx1",
        {f"/lib/modules/{kernel}/updates/lustre.standin": "the FSx Lustre client (stand-in)\n"},
    )


GRAFANA = """#!/bin/sh
# Grafana's server binary (stand-in): what `grafana --version` prints.
echo "grafana version {version} (commit: rehearsal)"
"""


def grafana_package(work: Path, version: str) -> Path:
    """grafana at ``version``, laid out as Grafana Labs' package is: the server under
    /usr/share/grafana and its own unit, grafana-server.service."""
    return deb(
        work,
        "grafana",
        version,
        {
            "/usr/share/grafana/bin/grafana": GRAFANA.format(version=version),
            "/lib/systemd/system/grafana-server.service": "[Service]\nExecStart=/bin/true\n",
        },
        mode=0o755,
    )


DCGMI = """#!/bin/sh
# The parent image's dcgmi (stand-in): what `dcgmi --version` prints.
echo "dcgmi  version: 3.3.9"
"""


def parent_dcgm(work: Path) -> Path:
    """The DCGM a Deep Learning Base AMI carries (its package name matches build.sh's
    datacenter-gpu-manager* pattern), with its dcgmi."""
    return deb(work, "datacenter-gpu-manager", "1:3.3.9", {"/usr/bin/dcgmi": DCGMI}, mode=0o755)


EFA_INSTALLER = """#!/bin/sh
# Stand-in for AWS's efa_installer.sh: its layout in /opt/amazon, and the two programs the
# image's test phase runs (the real mpicc is Open MPI's wrapper, which drives gcc too).
set -e
[ "${1:-}" = "-y" ] || { echo "usage: efa_installer.sh -y" >&2; exit 2; }
install -d /opt/amazon/efa/bin /opt/amazon/openmpi/bin
printf '#!/bin/sh\\necho "fi_info: 2.1.0amzn3.0 (stand-in)"\\n' >/opt/amazon/efa/bin/fi_info
printf '#!/bin/sh\\nexec gcc "$@"\\n' >/opt/amazon/openmpi/bin/mpicc
chmod 755 /opt/amazon/efa/bin/fi_info /opt/amazon/openmpi/bin/mpicc
echo "libfabric-aws openmpi40-aws (stand-in)" >/opt/amazon/efa_installed_packages
"""


def efa_installer(work: Path, out: Path, version: str) -> Path:
    """aws-efa-installer-<version>.tar.gz: aws-efa-installer/efa_installer.sh, as AWS ships it."""
    import tarfile

    tree = work / "aws-efa-installer"
    tree.mkdir(parents=True)
    script = tree / "efa_installer.sh"
    script.write_text(EFA_INSTALLER)
    script.chmod(0o755)
    tarball = out / f"aws-efa-installer-{version}.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(tree, arcname="aws-efa-installer")
    return tarball
