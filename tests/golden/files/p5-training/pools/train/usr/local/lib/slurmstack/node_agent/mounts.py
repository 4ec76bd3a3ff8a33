"""mounts: EFS and FSx for Lustre in /etc/fstab, mounted and retried until they answer."""

from __future__ import annotations

import shutil

from .base import AgentError, write_atomic
from .lnet import LNET_EFA_UNIT, LnetEfa

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

    def mounts(self, attempts: int = 30, delay: float = 10.0) -> list[str]:
        config = self.config()
        env = self.node_env()
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
        self.sh("apt-get", "update", "-q")
        kernel = self.sh("uname", "-r").stdout.strip()
        self.sh("apt-get", "install", "-y", "-q", f"lustre-client-modules-{kernel}")
