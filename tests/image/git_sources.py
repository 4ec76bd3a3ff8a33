"""Stand-ins for the sources the bake clones by git commit (enroot, efs-utils), as bare
repositories the rehearsal's file server serves over git's "dumb" HTTP protocol on loopback.

Each stand-in keeps the shape the real tag has where build.sh relies on it: enroot's Makefile
with `install` and `setcap` (prefix, sysconfdir) and a submodule; efs-utils' ./build-deb.sh
building build/amazon-efs-utils-<version>-1_<arch>.deb after a Rust crate at src/proxy with a
Cargo.lock (no dependencies, so `cargo fetch --locked` runs offline). What they build is
small; how it is fetched, checked, built and installed is build.sh's own code."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "rehearsal",
    "GIT_AUTHOR_EMAIL": "rehearsal@example.invalid",
    "GIT_COMMITTER_NAME": "rehearsal",
    "GIT_COMMITTER_EMAIL": "rehearsal@example.invalid",
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z",
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    # A submodule from a local path (allowed for this one command, not for the bake's clones).
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "protocol.file.allow",
    "GIT_CONFIG_VALUE_0": "always",
}


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@dataclass(frozen=True)
class GitSource:
    url: str  # where the file server serves the bare repository
    tag: str
    commit: str  # what the tag resolves to
    other_commit: str  # a commit of the same repository the tag is not


def publish(work: Path, www: Path, base_url: str, tag: str) -> GitSource:
    """Commit ``work``'s files, tag the commit (an annotated tag, which build.sh peels), add one
    commit after it, and publish a bare clone under ``www`` for dumb HTTP."""
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "release")
    git(work, "tag", "-a", tag, "-m", tag)
    commit = git(work, "rev-parse", "HEAD")
    (work / "NEWS").write_text("after the release\n")
    git(work, "add", "NEWS")
    git(work, "commit", "-q", "-m", "after the release")
    other = git(work, "rev-parse", "HEAD")
    bare = www / f"{work.name}.git"
    git(www, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "update-server-info")
    return GitSource(f"{base_url}/{bare.name}", tag, commit, other)


ENROOT_MAKEFILE = """\
prefix ?= /usr/local
sysconfdir ?= $(prefix)/etc
BINDIR = $(DESTDIR)$(prefix)/bin
SYSCONFDIR = $(DESTDIR)$(sysconfdir)/enroot

all: bin/enroot-mksquashovlfs enroot

deps/stand-in/VERSION:
\tgit submodule update --init

bin/enroot-mksquashovlfs: src/helper.c deps/stand-in/VERSION
\tmkdir -p bin
\t$(CC) -Wall -Werror -O2 -DDEPS_VERSION="\\"$$(cat deps/stand-in/VERSION)\\"" -o $@ src/helper.c

enroot: enroot.in
\tsed -e 's;@version@;{version};' $< > $@

install: all
\tinstall -d $(BINDIR) $(SYSCONFDIR)
\tinstall -m 755 enroot bin/enroot-mksquashovlfs $(BINDIR)
\tinstall -m 644 enroot.conf $(SYSCONFDIR)

setcap:
\tsetcap cap_sys_admin+pe $(BINDIR)/enroot-mksquashovlfs
"""
ENROOT_SCRIPT = """#!/bin/sh
# enroot stand-in: the version, and its helper runs.
case "$1" in
  version) echo @version@ ;;
  helper) exec enroot-mksquashovlfs ;;
esac
"""
ENROOT_HELPER = """#include <stdio.h>
int main(void) { printf("enroot helper, deps %s\\n", DEPS_VERSION); return 0; }
"""


def enroot_source(tmp: Path, www: Path, base_url: str, version: str) -> GitSource:
    """enroot's stand-in with a submodule (deps/stand-in) served from the same server."""
    deps = tmp / "enroot-deps"
    deps.mkdir()
    (deps / "VERSION").write_text("deps-1\n")
    deps_source = publish(deps, www, base_url, "deps-1")
    work = tmp / "enroot"
    (work / "src").mkdir(parents=True)
    (work / "Makefile").write_text(ENROOT_MAKEFILE.replace("{version}", version))
    (work / "enroot.in").write_text(ENROOT_SCRIPT)
    (work / "enroot.conf").write_text("# enroot stand-in configuration\n")
    (work / "src/helper.c").write_text(ENROOT_HELPER)
    git(work, "init", "-q", "-b", "main")
    git(work, "submodule", "add", "-q", str(deps), "deps/stand-in")
    git(work / "deps/stand-in", "checkout", "-q", deps_source.commit)
    # What a clone fetches: the served URL (the real .gitmodules names GitHub's and musl's).
    git(work, "config", "-f", ".gitmodules", "submodule.deps/stand-in.url", deps_source.url)
    return publish(work, www, base_url, f"v{version}")


BUILD_DEB = """#!/bin/sh
# efs-utils' build-deb.sh stand-in: efs-proxy built by cargo, a .deb of it and mount.efs.
set -ex
VERSION={version}
ARCH=$(dpkg --print-architecture)
cargo build --release --manifest-path src/proxy/Cargo.toml
root=build/debbuild
rm -rf "$root" && mkdir -p "$root/DEBIAN" "$root/sbin" "$root/usr/bin"
install -m 755 src/proxy/target/release/efs-proxy "$root/usr/bin/efs-proxy"
install -m 755 src/mount_efs "$root/sbin/mount.efs"
cat > "$root/DEBIAN/control" <<EOF
Package: amazon-efs-utils
Version: $VERSION-1
Architecture: $ARCH
Maintainer: rehearsal <rehearsal@example.invalid>
Depends: python3, nfs-common, stunnel4, openssl, util-linux
Description: efs-utils stand-in
EOF
dpkg-deb --root-owner-group --build "$root" "build/amazon-efs-utils-$VERSION-1_$ARCH.deb"
"""
CARGO_TOML = """[package]
name = "efs-proxy"
version = "{version}"
edition = "2021"
publish = false
"""
CARGO_LOCK = """# This file is automatically @generated by Cargo.
# It is not intended for manual editing.
version = 3

[[package]]
name = "efs-proxy"
version = "{version}"
"""


def efs_utils_source(tmp: Path, www: Path, base_url: str, version: str) -> GitSource:
    work = tmp / "efs-utils"
    (work / "src/proxy/src").mkdir(parents=True)
    (work / "build-deb.sh").write_text(BUILD_DEB.replace("{version}", version))
    (work / "build-deb.sh").chmod(0o755)
    (work / "src/mount_efs").write_text("#!/usr/bin/python3\nprint('mount.efs stand-in')\n")
    (work / "src/proxy/Cargo.toml").write_text(CARGO_TOML.replace("{version}", version))
    (work / "src/proxy/Cargo.lock").write_text(CARGO_LOCK.replace("{version}", version))
    (work / "src/proxy/src/main.rs").write_text('fn main() { println!("efs-proxy stand-in"); }\n')
    return publish(work, www, base_url, f"v{version}")
