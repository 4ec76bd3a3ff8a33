"""The node's file systems as the steps see them: what is mounted where, /etc/fstab entries,
and a command retried until it succeeds."""

from __future__ import annotations

import os

from .context import AgentError, Context, log, write_atomic


def read(ctx: Context, node_path: str) -> str | None:
    path = ctx.path(node_path)
    return path.read_text() if path.exists() else None


def mkdir(ctx: Context, node_path: str) -> None:
    ctx.path(node_path).mkdir(parents=True, exist_ok=True)


def mount_table(ctx: Context) -> list[tuple[str, str]]:
    """(source, mount point) of every line of /proc/mounts."""
    path = ctx.path("/proc/mounts")
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        fields = line.split()
        if len(fields) >= 2:
            out.append((fields[0], fields[1]))
    return out


def mounted(ctx: Context, mount: str) -> bool:
    return any(point == mount for _, point in mount_table(ctx))


def mount_point_of(ctx: Context, device: str) -> str | None:
    for source, point in mount_table(ctx):
        real = os.path.realpath(ctx.path(source)) if source.startswith("/dev/") else source
        if source == device or real == str(ctx.path(device)):
            return point
    return None


def retry(ctx: Context, cmd: list[str], attempts: int, delay: float) -> None:
    """A new mount target's DNS name takes up to 90 s to resolve (EFS User Guide); a file
    system still being created answers later still."""
    for attempt in range(1, attempts + 1):
        result = ctx.sh(*cmd, check=False)
        if result.returncode == 0:
            return
        log(f"{' '.join(cmd)} failed (attempt {attempt}/{attempts}): {result.stderr.strip()}")
        if attempt < attempts:
            ctx.sleep(delay)
    raise AgentError(f"{' '.join(cmd)} failed {attempts} times")


def fstab(ctx: Context, source: str, path: str, fstype: str, options: str) -> None:
    """The /etc/fstab entry of ``path``, replacing any earlier one."""
    table = ctx.path("/etc/fstab")
    lines = table.read_text().splitlines() if table.exists() else []
    lines = [line for line in lines if line.split()[1:2] != [path]]
    lines.append(f"{source} {path} {fstype} {options} 0 0")
    write_atomic(table, ("\n".join(lines) + "\n").encode(), 0o644)
