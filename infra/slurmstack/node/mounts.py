"""mounts: EFS and FSx for Lustre in /etc/fstab, mounted and retried until they answer."""

from __future__ import annotations

import shutil

from .base import (
    NODE_ENV,
    PARAM_EFS_ID,
    PARAM_LUSTRE_DNS,
    PARAM_LUSTRE_MOUNT_NAME,
    AgentError,
    write_atomic,
)
from .lnet import LNET_EFA_UNIT, LnetEfa

# node.env key -> the deploy-time parameter it comes from, by the kind of mount that needs it.
STORAGE_PARAMETERS = {
    "efs": {"SLURMSTACK_EFS_ID": PARAM_EFS_ID},
    "lustre": {
        "SLURMSTACK_LUSTRE_DNS": PARAM_LUSTRE_DNS,
        "SLURMSTACK_LUSTRE_MOUNT_NAME": PARAM_LUSTRE_MOUNT_NAME,
    },
}
# Amazon EFS User Guide, "Mounting EFS file systems using the EFS mount helper": the `efs`
# type of amazon-efs-utils (in the image) with `tls` encrypts the traffic in transit; the
# helper adds the NFS options the guide recommends (nfsvers=4.1, rsize/wsize 1 MiB, hard,
# timeo=600, retrans=2, noresvport) itself.
EFS_OPTIONS = "tls"
LUSTRE_OPTIONS = "noatime,flock"
# The image carries the Lustre client built for its kernel (slurmstack.images); nothing is
# installed at boot.
MOUNT_HELPERS = {"efs": "mount.efs", "lustre": "mount.lustre"}


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
        done = []
        for mount in config.get("mounts", []):
            kind, path = mount["kind"], mount["path"]
            self._mount_helper(kind)
            if kind == "efs":
                # The mount helper finds the mount target from the id (and the instance's region).
                source = f"{env['SLURMSTACK_EFS_ID']}:/"
                fstype, options = "efs", EFS_OPTIONS
            elif kind == "lustre":
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

    def _mount_helper(self, kind: str) -> None:
        helper = MOUNT_HELPERS.get(kind)
        if helper is None:
            return
        found = shutil.which(helper) or any(
            self.path(f"{d}/{helper}").exists() for d in ("/sbin", "/usr/sbin")
        )
        if not found:
            raise AgentError(
                f"{helper} is missing: the image lacks the {kind} client (the image contract, "
                "README 'Images'); nothing is installed at boot"
            )
