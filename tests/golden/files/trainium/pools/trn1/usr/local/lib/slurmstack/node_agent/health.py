"""health: the expected GPUs, Neuron and EFA devices; an unhealthy instance is marked so in
its Auto Scaling group."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .base import NodeBase, log


def _count(directory: Path, pattern: str) -> int:
    regex = re.compile(pattern + "$")
    if not directory.is_dir():
        return 0
    return sum(1 for entry in directory.iterdir() if regex.match(entry.name))


class Health(NodeBase):
    def health_problems(self) -> list[str]:
        expected = dict(self.config().get("health") or {})
        problems: list[str] = []
        dev = self.path("/dev")
        gpus = _count(dev, r"nvidia\d+")
        if gpus != expected.get("gpus", 0):
            problems.append(f"{gpus} GPU device files (/dev/nvidia*), expected {expected['gpus']}")
        elif gpus and shutil.which("nvidia-smi"):
            listed = self.sh(
                "nvidia-smi", "--query-gpu=index", "--format=csv,noheader", check=False
            )
            seen = len(listed.stdout.split()) if listed.returncode == 0 else 0
            if seen != gpus:
                problems.append(f"nvidia-smi lists {seen} GPUs, expected {gpus}")
        neuron = _count(dev, r"neuron\d+")
        if neuron != expected.get("neuron_devices", 0):
            problems.append(f"{neuron} Neuron devices, expected {expected['neuron_devices']}")
        infiniband = self.path("/sys/class/infiniband")
        efa = len(list(infiniband.iterdir())) if infiniband.is_dir() else 0
        if efa != expected.get("efa_devices", 0):
            problems.append(
                f"{efa} EFA devices (/sys/class/infiniband), expected {expected['efa_devices']}"
            )
        return problems

    def health(self) -> list[str]:
        """Problems found; when there are any the instance is marked Unhealthy so its Auto
        Scaling group replaces it."""
        problems = self.health_problems()
        if problems:
            instance = self.node_env().get("SLURMSTACK_INSTANCE_ID") or self.imds("instance-id")  # type: ignore[operator]
            for problem in problems:
                log(f"health check failed: {problem}")
            self.client("autoscaling").set_instance_health(
                InstanceId=instance, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False
            )
            log(f"marked {instance} Unhealthy in its Auto Scaling group")
        return problems
