"""People in the definition: the users and groups every node knows, or a directory (LDAP or
Active Directory) that every node reads through SSSD, or both.

Which wins when both are given: the definition's users and groups are local accounts, and
nodes look up local accounts first (nsswitch ``files sss``), so a name the definition declares
is the definition's on every node, whatever the directory says. The checks make sure the
definition's own names and ids are sound; a clash with the directory's ids is the directory
owner's to avoid (docs/people-and-login-nodes.md).
"""

from __future__ import annotations

import enum
from typing import Annotated

from pydantic import Field, StringConstraints, WithJsonSchema

from slurmstack.spec_base import SECRET_ID_PATTERN, Model, UserName, matching

# A group name: the same rule as a login name (groupadd's default pattern).
GROUP_NAME_PATTERN = r"^[a-z_][a-z0-9_.-]{0,30}$"
GroupName = Annotated[
    str,
    matching(GROUP_NAME_PATTERN, "a Linux group name: lowercase, such as research or gpu-users"),
    WithJsonSchema({"type": "string", "pattern": GROUP_NAME_PATTERN}),
]
# Linux ids are 32-bit; 4294967295 is (uid_t)-1, "no id". The range people may take is the
# checks' (slurmstack.contract.PERSON_ID_MIN/MAX): the schema keeps the kernel's.
PosixId = Annotated[int, Field(ge=0, le=2**32 - 2)]
# An IAM user or role that may open Session Manager sessions as this user.
IAM_PRINCIPAL_PATTERN = r"^arn:aws[a-z-]*:iam::[0-9]{12}:(user|role)/[A-Za-z0-9+=,.@_/-]{1,512}$"
LDAP_URI_PATTERN = r"^ldaps?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?$"
SHELL_PATTERN = r"^/[A-Za-z0-9._/-]+$"


class UserSpec(Model):
    """A person: one Linux account with the same name, uid and groups on every node."""

    name: UserName = Field(description="Login name (also the Slurm user accounts name).")
    uid: PosixId = Field(
        description=(
            "User id, the same on every node (and on the shared /home). People take ids from "
            "2000 to 59999: below is the system's and the image's (ubuntu 1000, ssm-user), "
            "above are Debian's fixed daemon ids (slurm 64030) and nobody."
        )
    )
    group: GroupName | None = Field(
        default=None,
        description=(
            "Primary group: a group declared under groups. Default: a personal group of the "
            "user's name whose gid is the uid (useradd's user groups)."
        ),
    )
    groups: list[GroupName] = Field(
        default_factory=list, description="Further groups (declared under groups)."
    )
    ssh_keys: list[Annotated[str, StringConstraints(max_length=16384)]] = Field(
        default_factory=list,
        description=(
            "OpenSSH public keys (one line each: type, base64, optional comment), the only "
            "keys that log this user in over SSH to a login node."
        ),
    )
    iam_principal: str | None = Field(
        default=None,
        pattern=IAM_PRINCIPAL_PATTERN,
        description=(
            "IAM user or role ARN whose Session Manager shells run as this user (Run As: tag "
            "the principal SSMSessionRunAs=<name>; plan prints the command)."
        ),
    )
    admin: bool = Field(
        default=False, description="sudo on every node (nobody else has it, ssm-user included)."
    )
    locked: bool = Field(
        default=False,
        description=(
            "Keep the account, its id and its files, but let nobody log in or run jobs as it. "
            "A user removed from the definition is locked the same way, never deleted."
        ),
    )
    shell: str = Field(
        default="/bin/bash", pattern=SHELL_PATTERN, description="Login shell (absolute path)."
    )


class GroupSpec(Model):
    """A group: the same name and gid on every node."""

    name: GroupName = Field(description="Group name.")
    gid: PosixId = Field(description="Group id (2000 to 59999, as user ids).")


class DirectoryType(enum.StrEnum):
    LDAP = "ldap"
    ACTIVE_DIRECTORY = "active_directory"


class DirectoryAttributes(Model):
    """Which directory attribute holds each POSIX field (SSSD's ldap_user_* and ldap_group_*
    options). The defaults are RFC 2307's, as OpenLDAP's nis schema and AD's own attributes
    (uidNumber, gidNumber, unixHomeDirectory aside) name them."""

    user_name: str = Field(default="uid", description="Login name (AD: sAMAccountName).")
    uid_number: str = Field(default="uidNumber", description="User id.")
    gid_number: str = Field(default="gidNumber", description="Primary group id.")
    home_directory: str = Field(
        default="homeDirectory", description="Home directory (AD: unixHomeDirectory)."
    )
    login_shell: str = Field(default="loginShell", description="Login shell.")
    ssh_public_key: str = Field(
        default="sshPublicKey", description="SSH public keys (openssh-lpk's attribute)."
    )
    group_name: str = Field(default="cn", description="Group name.")
    group_member: str = Field(
        default="memberUid", description="Group members (AD and rfc2307bis: member)."
    )


class DirectorySpec(Model):
    """A directory every node reads people from, through SSSD (over TLS only)."""

    type: DirectoryType = Field(
        default=DirectoryType.LDAP,
        description="ldap (OpenLDAP, 389-ds, AWS Managed Microsoft AD as LDAP) or "
        "active_directory (AD's schema: rfc2307bis groups, sAMAccountName names).",
    )
    uris: list[Annotated[str, StringConstraints(pattern=LDAP_URI_PATTERN)]] = Field(
        min_length=1,
        max_length=8,
        description=(
            "Directory servers, tried in order: ldaps://host[:port], or ldap://host[:port] "
            "with StartTLS (nodes never send a bind password in the clear)."
        ),
    )
    search_base: str = Field(
        min_length=3, max_length=512, description="Search base, e.g. dc=example,dc=com."
    )
    bind_dn: str | None = Field(
        default=None,
        max_length=512,
        description="DN nodes bind as (a read-only service account). None: anonymous.",
    )
    bind_password_secret: str | None = Field(
        default=None,
        pattern=SECRET_ID_PATTERN,
        description="Name or ARN of the Secrets Manager secret holding bind_dn's password.",
    )
    ca_certificate: str | None = Field(
        default=None,
        max_length=65536,
        description=(
            "PEM certificate(s) of the CA that signed the servers' certificates (required: "
            "nodes verify the servers)."
        ),
    )
    admin_group: GroupName | None = Field(
        default=None, description="Directory group whose members get sudo on every node."
    )
    access_group: GroupName | None = Field(
        default=None,
        description="Directory group whose members may log in. None: every directory user.",
    )
    attributes: DirectoryAttributes = Field(
        default_factory=DirectoryAttributes, description="Attribute mapping."
    )
