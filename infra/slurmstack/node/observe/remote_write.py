"""`prometheus-config` (the head's Prometheus unit, before it starts, as root): the live
configuration when observability.managed_prometheus is on. The rendered configuration names
the remote-write endpoint by a stand-in (REMOTE_WRITE_URL_PLACEHOLDER): the workspace's URL is
known at deploy time only, so it is read from its parameter here and put in the stand-in's
place. Prometheus signs each request itself (its remote_write sigv4 section, the head's
instance role)."""

from __future__ import annotations

from ...contract import (
    PROMETHEUS_LIVE_CONFIG,
    REMOTE_WRITE_URL_PLACEHOLDER,
    DeployParameter,
)
from ..context import AgentError, Context, log, write_atomic

# How long the start waits for the parameter (within systemd's start timeout): the stack writes
# it with the workspace, before the head boots, so a wait means the workspace was not made.
PARAMETER_TIMEOUT_SECONDS = 60.0


def live_config(rendered: str, url: str) -> str:
    if REMOTE_WRITE_URL_PLACEHOLDER not in rendered:
        raise AgentError("the rendered Prometheus configuration has no remote-write endpoint")
    if not url.startswith("https://") or any(c.isspace() for c in url):
        raise AgentError(f"the remote-write URL {url!r} is not an https:// address")
    return rendered.replace(REMOTE_WRITE_URL_PLACEHOLDER, url)


def write_live_config(
    ctx: Context, rendered_path: str, timeout: float = PARAMETER_TIMEOUT_SECONDS
) -> str:
    """Write PROMETHEUS_LIVE_CONFIG from ``rendered_path``; return the URL put in."""
    path = ctx.path(rendered_path)
    if not path.exists():
        raise AgentError(f"{rendered_path} is missing: sync-config has not run")
    url = ctx.wait_parameter(DeployParameter.REMOTE_WRITE_URL, timeout, 5.0)
    write_atomic(
        ctx.path(PROMETHEUS_LIVE_CONFIG), live_config(path.read_text(), url).encode(), 0o644
    )
    log(f"prometheus-config: remote write to {url}")
    return url
