"""People on the nodes: the ids they may take, the login pools' names, and identities.json,
what every node's agent makes of the definition's users, groups and directory."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ADMINS_SUDOERS_PATH",
    "AUTHORIZED_KEYS_DIR",
    "IDENTITIES_PATH",
    "IDENTITY_STATE_PATH",
    "IMAGE_IDS",
    "LOGIN_HOST_KEY_PATH",
    "LOGIN_POOL_TAG",
    "LOGIN_ROLE",
    "LOGIN_ROLE_PREFIX",
    "NOLOGIN_SHELL",
    "PERSON_ID_MAX",
    "PERSON_ID_MIN",
    "SACKD_UNIT",
    "SSHD_DROPIN_PATH",
    "SSHD_UNIT",
    "SSM_SUDOERS_PATH",
    "SSM_USER",
    "SSSD_CONF_PATH",
    "Directory",
    "Identities",
    "Person",
    "PosixGroup",
    "is_login_role",
    "login_host_key_secret_name",
    "login_pool_of",
    "login_role",
]

# --- ids ---------------------------------------------------------------------------------
# People take ids from PERSON_ID_MIN to PERSON_ID_MAX. Below: the system's (Debian and Ubuntu
# give daemons 100-999: munge, slurm and the rest of the image's --system users) and the
# image's own accounts, which useradd numbers from 1000 (ubuntu is 1000, the SSM agent's
# ssm-user takes the next free id on the first session). Above: Debian's UID_MAX is 60000, and
# its packages' fixed ids sit higher (slurm-wlm's slurm is 64030; nobody is 65534).
PERSON_ID_MIN = 2000
PERSON_ID_MAX = 59999
# Ids an image is known to hand out, with whose they are: named in the checks' messages.
IMAGE_IDS = {
    0: "root",
    1000: "ubuntu (the Ubuntu and Deep Learning AMIs' default user)",
    1001: "ssm-user (the SSM agent makes it on the first session)",
    64030: "slurm (Debian's and Ubuntu's slurm-wlm packages)",
    65534: "nobody",
}

# --- login nodes -------------------------------------------------------------------------
# A login pool's role (bootstrap.env, the manifest, the render layout "login/<pool>/..."):
# "login/<pool>", which no worker pool name can be (pool names have no '/').
LOGIN_ROLE = "login"
LOGIN_ROLE_PREFIX = f"{LOGIN_ROLE}/"
# On a login pool's instances (value: the login pool), instead of slurmstack:pool: the head's
# controller and power programs look after instances with a pool tag, and a login node is
# not a Slurm node.
LOGIN_POOL_TAG = "slurmstack:login-pool"
# The Session Manager shell's account, which the SSM agent makes with sudo for everyone who
# may start a session. Login nodes take that sudo away (SSM_SUDOERS_PATH).
SSM_USER = "ssm-user"


def login_role(pool: str) -> str:
    return f"{LOGIN_ROLE_PREFIX}{pool}"


def is_login_role(role: str) -> bool:
    return role.startswith(LOGIN_ROLE_PREFIX)


def login_pool_of(role: str) -> str:
    return role.removeprefix(LOGIN_ROLE_PREFIX)


def login_host_key_secret_name(cluster: str, pool: str) -> str:
    """The Secrets Manager secret holding a login pool's SSH host key: the first node of the
    pool makes the key and stores it there, every later one (a replacement) takes it, so
    users' known_hosts keep trusting the pool."""
    return f"slurmstack/{cluster}/login/{pool}/ssh-host-key"


# --- where the agent puts people's things ------------------------------------------------
IDENTITIES_PATH = "/etc/slurmstack/identities.json"
# The accounts the agent made, by name -> uid: a name that leaves the definition is locked,
# not deleted, and its id is never handed to anyone else on this node.
IDENTITY_STATE_PATH = "/var/lib/slurmstack/identities-state.json"
# sshd reads people's keys from here only (root-owned, one file per user, written from the
# definition): keys in a home directory do not log anyone in.
AUTHORIZED_KEYS_DIR = "/etc/ssh/slurmstack-authorized-keys"
SSHD_DROPIN_PATH = "/etc/ssh/sshd_config.d/50-slurmstack.conf"
# The login pool's one host key (from the pool's secret), the only one its sshd offers.
LOGIN_HOST_KEY_PATH = "/etc/ssh/slurmstack_host_ed25519_key"
SSHD_UNIT = "ssh.service"  # Debian's and Ubuntu's name
# A login node's Slurm clients: sackd, configless (slurmstack's own unit).
SACKD_UNIT = "slurmstack-sackd.service"
ADMINS_SUDOERS_PATH = "/etc/sudoers.d/50-slurmstack-admins"
# The SSM agent writes ssm-user's sudo here only when the file does not exist (Session
# Manager User Guide, "Turn on or turn off ssm-user account administrative permissions"): a
# login node writes it first, without the grant.
SSM_SUDOERS_PATH = "/etc/sudoers.d/ssm-agent-users"
SSSD_CONF_PATH = "/etc/sssd/sssd.conf"
NOLOGIN_SHELL = "/usr/sbin/nologin"


@dataclass(frozen=True)
class Person:
    """A user as every node creates them."""

    name: str
    uid: int
    group: str  # primary group's name
    gid: int  # and its id
    groups: tuple[str, ...] = ()  # further groups
    ssh_keys: tuple[str, ...] = ()
    admin: bool = False
    locked: bool = False
    shell: str = "/bin/bash"


@dataclass(frozen=True)
class PosixGroup:
    name: str
    gid: int


@dataclass(frozen=True)
class Directory:
    """What SSSD needs to read people from a directory (sssd.conf's domain)."""

    kind: str  # ldap or active_directory
    uris: tuple[str, ...]
    search_base: str
    bind_dn: str = ""
    bind_password_secret: str = ""  # fetched by the agent, written into sssd.conf (0600)
    ca_certificate: str = ""  # PEM, written next to sssd.conf
    admin_group: str = ""
    access_group: str = ""
    attributes: dict[str, str] = field(default_factory=dict)  # DirectoryAttributes' fields


@dataclass(frozen=True)
class Identities:
    """identities.json (IDENTITIES_PATH): the people of the cluster, the same file on every
    node but for ``login``. The agent's ``identities`` subcommand applies it before slurmd or
    slurmctld starts and again on every configuration push."""

    home: str  # where homes are: /home (shared when the cluster has storage.home)
    shared_home: bool = True
    people: tuple[Person, ...] = ()
    groups: tuple[PosixGroup, ...] = ()  # the declared groups and the personal ones
    directory: Directory | None = None
    # A login node: sshd takes people's keys, ssm-user loses sudo.
    login: bool = False
    # The login pool's host key secret (login nodes only).
    host_key_secret: str = ""
