"""health: the expected GPUs, Neuron and EFA devices; an unhealthy instance is marked so in
its Auto Scaling group."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .context import Context, log


def _count(directory: Path, pattern: str) -> int:
    regex = re.compile(pattern + "$")
    if not directory.is_dir():
        return 0
    return sum(1 for entry in directory.iterdir() if regex.match(entry.name))


def health_problems(ctx: Context) -> list[str]:
    expected = ctx.config().health
    problems: list[str] = []
    dev = ctx.path("/dev")
    gpus = _count(dev, r"nvidia\d+")
    if gpus != expected.gpus:
        problems.append(f"{gpus} GPU device files (/dev/nvidia*), expected {expected.gpus}")
    elif gpus and shutil.which("nvidia-smi"):
        listed = ctx.sh("nvidia-smi", "--query-gpu=index", "--format=csv,noheader", check=False)
        seen = len(listed.stdout.split()) if listed.returncode == 0 else 0
        if seen != gpus:
            problems.append(f"nvidia-smi lists {seen} GPUs, expected {gpus}")
    neuron = _count(dev, r"neuron\d+")
    if neuron != expected.neuron_devices:
        problems.append(f"{neuron} Neuron devices, expected {expected.neuron_devices}")
    infiniband = ctx.path("/sys/class/infiniband")
    efa = len(list(infiniband.iterdir())) if infiniband.is_dir() else 0
    if efa != expected.efa_devices:
        problems.append(
            f"{efa} EFA devices (/sys/class/infiniband), expected {expected.efa_devices}"
        )
    return problems


def health(ctx: Context) -> list[str]:
    """Problems found; when there are any the instance is marked Unhealthy so its Auto
    Scaling group replaces it."""
    problems = health_problems(ctx)
    if problems:
        instance = ctx.node_env().instance_id or ctx.imds("instance-id")
        for problem in problems:
            log(f"health check failed: {problem}")
        ctx.aws.autoscaling().set_instance_health(
            InstanceId=instance, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False
        )
        log(f"marked {instance} Unhealthy in its Auto Scaling group")
    return problems
