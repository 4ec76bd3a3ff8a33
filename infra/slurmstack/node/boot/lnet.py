"""lnet-efa: LNet for Lustre over EFA (TCP on the primary interface, the pool's EFA
interfaces, EFA preferred)."""

from __future__ import annotations

import os
import re

from ..context import AgentError, Context, log

# Lustre over EFA (FSx for Lustre User Guide, "Configuring EFA clients"; the LNet steps are those
# of the EKS User Guide, "Optimize Amazon FSx for Lustre performance on nodes (EFA)"): the EFA
# LND (kefalnd) bound to the primary interface, a tcp network on that interface (the mount
# still names the file system by its @tcp address), one efa network interface per selected EFA
# device with 32 peer credits, discovery on and a selection rule that prefers efa.
LNET_EFA_PEER_CREDITS = 32
# The EKS guide's client check refuses EFA drivers older than this.
EFA_DRIVER_MIN_VERSION = (2, 12, 1)


def parse_version(text: str) -> tuple[int, ...] | None:
    """(2, 13, 0) from a module version such as "2.13.0g"."""
    numbers = re.findall(r"\d+", text.strip().split("-")[0])
    return tuple(int(n) for n in numbers) if numbers else None


def pick_efa_devices(devices: list[str], count: int) -> list[str]:
    """``count`` of the sorted EFA devices, spread over the list. AWS's documented choices:
    on a p5 (32 devices, 8 wanted) every fourth device, one per PCI switch; for two, the
    first and the last; for one, the first."""
    if count >= len(devices):
        return list(devices)
    if count <= 1:
        return devices[:count]
    if count == 2:
        return [devices[0], devices[-1]]
    return devices[:: len(devices) // count][:count]


def lnet_interfaces(net_show: str) -> dict[str, list[str]]:
    """Network type -> interface names, from `lnetctl net show` (YAML, read line by line so
    the agent needs no YAML library). "tcp0" counts as "tcp"."""
    nets: dict[str, list[str]] = {}
    current = None
    in_interfaces = False
    for line in net_show.splitlines():
        text = line.strip().lstrip("- ").strip()
        if text.startswith("net type:"):
            current = re.sub(r"^(tcp|efa)0$", r"\1", text.split(":", 1)[1].strip())
            nets.setdefault(current, [])
            in_interfaces = False
        elif text.startswith("interfaces:"):
            in_interfaces = True
        elif in_interfaces and current is not None and re.match(r"^\d+:\s*\S+$", text):
            nets[current].append(text.split(":", 1)[1].strip())
        else:
            in_interfaces = False
    return nets


def prefers_efa(udsp_show: str) -> bool:
    """Whether `lnetctl udsp show` lists a rule with source efa."""
    return re.search(r"\bsrc:\s*efa\b", udsp_show) is not None


def lnet_efa(ctx: Context, attempts: int = 30, delay: float = 10.0) -> list[str]:
    """Configure LNet for Lustre over EFA; return the EFA devices it uses ([] when this
    pool mounts Lustre over TCP). Safe to run again: what is already configured is kept.
    The prerequisites are checked once; the configuration is retried until it verifies."""
    wanted = ctx.config().lustre_efa_interfaces or 0
    if not wanted:
        log("this pool mounts Lustre over TCP: no LNet EFA configuration")
        return []
    _check_efa_client(ctx)
    for attempt in range(1, attempts + 1):
        try:
            interface = _primary_interface(ctx)
            devices = pick_efa_devices(efa_devices(ctx), wanted)
            if not devices:
                raise AgentError("no EFA devices under /sys/class/infiniband")
            _configure_lnet(ctx, interface, devices)
            return devices
        except AgentError as exc:
            log(f"LNet over EFA (attempt {attempt}/{attempts}): {exc}")
            if attempt >= attempts:
                raise
            ctx.sleep(delay)
    return []


def _check_efa_client(ctx: Context) -> None:
    """The EFA driver and the Lustre client's EFA LND must be there (FSx for Lustre
    User Guide: Ubuntu 22.04+ with kernel 6.8+ and the FSx Lustre client)."""
    driver = ctx.sh("modinfo", "-F", "version", "efa", check=False)
    version = parse_version(driver.stdout) if driver.returncode == 0 else None
    if version is None:
        raise AgentError("the EFA kernel driver is not installed (modinfo efa)")
    if version < EFA_DRIVER_MIN_VERSION:
        wanted = ".".join(map(str, EFA_DRIVER_MIN_VERSION))
        raise AgentError(f"EFA driver {driver.stdout.strip()} is older than {wanted}")
    if ctx.sh("modinfo", "-F", "filename", "kefalnd", check=False).returncode != 0:
        raise AgentError(
            "the Lustre client has no EFA network driver (kefalnd): install the FSx "
            "Lustre client modules for this kernel (6.8 or later)"
        )


def _primary_interface(ctx: Context) -> str:
    """The network interface holding the node's private address (card 0)."""
    address = ctx.node_env().address or ctx.imds("local-ipv4")
    for line in ctx.ok("ip", "-o", "-4", "addr", "show").splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "inet" and fields[3].split("/")[0] == address:
            return fields[1]
    raise AgentError(f"no network interface holds {address}")


def efa_devices(ctx: Context) -> list[str]:
    """EFA devices (driver efa) under /sys/class/infiniband, sorted by name."""
    infiniband = ctx.path("/sys/class/infiniband")
    found = []
    for entry in sorted(infiniband.iterdir()) if infiniband.is_dir() else []:
        driver = entry / "device" / "driver"
        if os.path.basename(os.path.realpath(driver)) == "efa":
            found.append(entry.name)
    return found


def _configure_lnet(ctx: Context, interface: str, devices: list[str]) -> None:
    ctx.ok("modprobe", "lnet")
    # Loaded already (an earlier run): modprobe keeps it, with the same interface.
    ctx.ok("modprobe", "kefalnd", f"ipif_name={interface}")
    ctx.ok("modprobe", "ksocklnd")
    ctx.sh("lnetctl", "lnet", "configure", check=False)  # already configured: harmless
    nets = lnet_interfaces(_lnetctl(ctx, "net", "show"))
    if interface not in nets.get("tcp", []):
        # A tcp network on another interface (LNet's default pick) is replaced.
        if "tcp" in nets:
            ctx.sh("lnetctl", "net", "del", "--net", "tcp", check=False)
        _lnetctl(ctx, "net", "add", "--net", "tcp", "--if", interface)
    for device in devices:
        if device not in nets.get("efa", []):
            credits = str(LNET_EFA_PEER_CREDITS)
            _lnetctl(ctx, "net", "add", "--net", "efa", "--if", device, "--peer-credits", credits)
    _lnetctl(ctx, "set", "discovery", "1")
    if not prefers_efa(_lnetctl(ctx, "udsp", "show")):
        _lnetctl(ctx, "udsp", "add", "--src", "efa", "--priority", "0")
    ctx.ok("modprobe", "lustre")
    configured = lnet_interfaces(_lnetctl(ctx, "net", "show"))
    missing = [d for d in devices if d not in configured.get("efa", [])]
    if missing:
        raise AgentError(f"EFA interfaces not in LNet: {' '.join(missing)}")
    log(f"LNet over EFA: tcp on {interface}, efa on {' '.join(devices)}")


def _lnetctl(ctx: Context, *args: str) -> str:
    return ctx.ok("lnetctl", *args)
