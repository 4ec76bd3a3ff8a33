"""The bake's lookup of which packages hold the libraries its built binaries load
(templates/image/build.sh, library_packages), run as the bake runs it: bash with
`set -euo pipefail`, with a stand-in dpkg-query on PATH. A library no package holds is one the
bake built itself (Slurm's libslurmfull.so); when such a library sorted last, the lookup's
pipeline returned 1 and the bake exited right after "agent: installed" without a word."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "templates/image/build.sh"

# What the stand-in dpkg-query knows: path -> its answer to `dpkg-query -S` (dpkg's format).
OWNERS = {
    "/lib/x86_64-linux-gnu/libc.so.6": "libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libmunge.so.2": (
        "libmunge2:amd64: /usr/lib/x86_64-linux-gnu/libmunge.so.2"
    ),
    # A path two packages share (dpkg lists both, comma-separated).
    "/usr/lib/x86_64-linux-gnu/libshared.so.1": (
        "liba1, libb2: /usr/lib/x86_64-linux-gnu/libshared.so.1"
    ),
}


def function_text(name: str) -> str:
    """The shell function ``name`` as build.sh defines it (from its line to the closing brace)."""
    script = BUILD_SCRIPT.read_text()
    match = re.search(rf"^{name}\(\) \{{\n.*?^\}}\n", script, flags=re.M | re.S)
    assert match, f"build.sh defines no {name}()"
    return match.group(0)


def stand_in_dpkg_query(directory: Path) -> None:
    cases = "\n".join(f"    '{path}') echo '{answer}' ;;" for path, answer in OWNERS.items())
    program = directory / "dpkg-query"
    program.write_text(
        "#!/bin/bash\n"
        '[ "$1" = -S ] || exit 2\n'
        'case "$2" in\n'
        f"{cases}\n"
        '    *) echo "dpkg-query: no path found matching pattern $2" >&2; exit 1 ;;\n'
        "esac\n"
    )
    program.chmod(0o755)


def library_packages(libraries: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    stand_in_dpkg_query(tmp_path)
    script = (
        "set -euo pipefail\n"
        + function_text("library_packages")
        + "packages=$(printf '%s\\n' \"$@\" | library_packages)\n"
        + 'echo "$packages"\n'
    )
    return subprocess.run(
        ["bash", "-c", script, "bash", *libraries],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin", "LANG": "C.UTF-8"},
    )


def test_a_built_library_listed_last_does_not_end_the_bake(tmp_path: Path) -> None:
    # The order the bake feeds them in (sort -u): Slurm's own library sorts after the system's.
    libraries = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libmunge.so.2",
        "/usr/lib/x86_64-linux-gnu/slurm/libslurmfull.so",
    ]
    out = library_packages(libraries, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["libc6", "libmunge2"]


def test_every_owner_of_a_shared_path_is_kept_and_unowned_ones_anywhere_are_skipped(
    tmp_path: Path,
) -> None:
    libraries = [
        "/usr/lib/x86_64-linux-gnu/slurm/libslurm_pmi.so",
        "/usr/lib/x86_64-linux-gnu/libshared.so.1",
        "/opt/amazon/efa/lib/libfabric.so.1",
        "/lib/x86_64-linux-gnu/libc.so.6",
    ]
    out = library_packages(libraries, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["liba1", "libb2", "libc6"]


def test_no_library_at_all_is_no_package(tmp_path: Path) -> None:
    out = library_packages([], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
