"""mounts: EFS and FSx for Lustre in /etc/fstab, mounted and retried until they answer."""

from __future__ import annotations

import shutil

from ..contract import LNET_EFA_UNIT
from .base import (
    NODE_ENV,
    PARAM_EFS_ID,
    PARAM_LUSTRE_DNS,
    PARAM_LUSTRE_MOUNT_NAME,
    AgentError,
    write_atomic,
)
from .lnet import LnetEfa

# node.env key -> the deploy-time parameter it comes from, by the kind of mount that needs it.
STORAGE_PARAMETERS = {
    "efs": {"SLURMSTACK_EFS_ID": PARAM_EFS_ID},
    "lustre": {
        "SLURMSTACK_LUSTRE_DNS": PARAM_LUSTRE_DNS,
        "SLURMSTACK_LUSTRE_MOUNT_NAME": PARAM_LUSTRE_MOUNT_NAME,
    },
}
# apt on a running node waits for another apt (unattended-upgrades) instead of failing.
APT_GET = ("apt-get", "-o", "DPkg::Lock::Timeout=1200", "-y", "-q")

# Amazon EFS User Guide, "Mounting on Amazon EC2 Linux instances using the NFS client".
EFS_OPTIONS = "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport"
LUSTRE_OPTIONS = "noatime,flock"
# FSx for Lustre client for Ubuntu, from the FSx client repository (FSx User Guide,
# "Installing the Lustre client").
FSX_KEY_URL = (
    "https://fsx-lustre-client-repo-public-keys.s3.amazonaws.com/fsx-ubuntu-public-key.asc"
)
FSX_REPO = "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu"
FSX_KEYRING = "/usr/share/keyrings/fsx-ubuntu-public-key.gpg"


class Mounts(LnetEfa):
    """Shared file systems; Lustre over EFA configures LNet (LnetEfa) first."""

    def storage_env(self, timeout: float = 3600.0, poll: float = 10.0) -> dict[str, str]:
        """node.env with the names of the file systems this role mounts, waiting for each
        parameter (they appear once the file system exists) and recording it."""
        env = self.node_env()
        kinds = {m["kind"] for m in self.config().get("mounts", [])}
        wanted = {k: v for kind in sorted(kinds) for k, v in STORAGE_PARAMETERS[kind].items()}
        missing = {key: param for key, param in wanted.items() if not env.get(key)}
        for key, param in missing.items():
            env[key] = self.wait_parameter(param, timeout, poll)
        if missing:
            text = "".join(f"{k}={v}\n" for k, v in sorted(env.items()))
            write_atomic(self.path(NODE_ENV), text.encode(), 0o644)
        return env

    def mounts(self, attempts: int = 30, delay: float = 10.0) -> list[str]:
        config = self.config()
        env = self.storage_env()
        region = str(config["region"])
        done = []
        for mount in config.get("mounts", []):
            kind, path = mount["kind"], mount["path"]
            if kind == "efs":
                source = f"{env['SLURMSTACK_EFS_ID']}.efs.{region}.amazonaws.com:/"
                fstype, options = "nfs4", EFS_OPTIONS
            elif kind == "lustre":
                self._lustre_client()
                dns, name = env["SLURMSTACK_LUSTRE_DNS"], env["SLURMSTACK_LUSTRE_MOUNT_NAME"]
                # The same source over TCP or EFA: the client reaches the MGS at its @tcp
                # address, discovery then finds the servers' EFA NIDs, which LNet prefers.
                source = f"{dns}@tcp:/{name}"
                fstype, options = "lustre", LUSTRE_OPTIONS
                if int(config.get("lustre_efa_interfaces") or 0):
                    self.lnet_efa(attempts=attempts, delay=delay)
                    # At every later boot systemd runs the LNet setup before this mount.
                    options += f",x-systemd.requires={LNET_EFA_UNIT}"
            else:
                raise AgentError(f"unknown mount kind {kind!r}")
            self._fstab(source, path, fstype, f"{options},_netdev,nofail")
            if not self._mounted(path):
                self._mkdir(path)
                self._retry(["mount", path], attempts, delay)
            done.append(path)
        return done

    def _lustre_client(self) -> None:
        if shutil.which("mount.lustre") or self.path("/sbin/mount.lustre").exists():
            return
        codename = self.sh("lsb_release", "-cs").stdout.strip()
        self.sh("sh", "-c", f"curl -fsSL {FSX_KEY_URL} | gpg --dearmor -o {FSX_KEYRING}")
        source = f"deb [signed-by={FSX_KEYRING}] {FSX_REPO} {codename} main\n"
        write_atomic(
            self.path("/etc/apt/sources.list.d/fsxlustreclientrepo.list"), source.encode(), 0o644
        )
        self.sh(*APT_GET, "update")
        kernel = self.sh("uname", "-r").stdout.strip()
        self.sh(*APT_GET, "install", f"lustre-client-modules-{kernel}")
