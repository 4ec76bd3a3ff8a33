"""The cloud-init document of each role: the user data, which carries only stable
identifiers, the first-boot script and the metadata firewall, and installs the agent."""

from __future__ import annotations

import ast
import copy
import inspect
from functools import cache
from pathlib import Path

from slurmstack import contract, imds_firewall
from slurmstack.contract import (
    AGENT_PATH,
    BOOTSTRAP_FAILED,
    BOOTSTRAP_PATH,
    HEAD_ROLE,
    STATE_VOLUME_DEVICE,
    STATE_VOLUME_MOUNT,
    BootstrapEnv,
    DeployParameter,
    bootstrap_env_text,
    is_login_role,
)
from slurmstack.plan import ClusterPlan, accounting_plan, role_image_contract
from slurmstack.render.node import BOOTSTRAP_SOURCE
from slurmstack.render.roles import login_pool_named, pool_named
from slurmstack.render.templates import render_template

CLOUD_INIT = "cloud-init.yaml"
# EC2 refuses user data above 16 KB (before base64). The stack gives it the document
# gzip-compressed and checks the compressed size (slurmstack.stack.user_data).
USER_DATA_LIMIT = 16 * 1024


def bootstrap_env(plan: ClusterPlan, role: str) -> BootstrapEnv:
    return BootstrapEnv(
        cluster=plan.name,
        region=plan.region,
        role=role,
        parameter_prefix=plan.parameter_prefix,
        munge_secret=plan.munge_secret_name,
        manifest_parameter=plan.parameter(DeployParameter.CONFIG_MANIFEST),
        bucket_parameter=plan.parameter(DeployParameter.BUCKET),
    )


def imds_firewall_files(plan: ClusterPlan, role: str) -> dict[str, str]:
    """Absolute node path -> text: the metadata-service firewall of ``role`` and the unit that
    loads it. They travel in the cloud-init document itself, not the config store, so they are
    on disk before anything on the node fetches a credential."""
    fw = imds_firewall.firewall(role, head=role == HEAD_ROLE)
    return {
        fw.rules_path: render_template("nftables/imds-firewall.nft.j2", plan=plan, fw=fw),
        imds_firewall.UNIT_PATH: render_template(
            "systemd/slurmstack-imds-firewall.service.j2", plan=plan, fw=fw
        ),
    }


def _common(plan: ClusterPlan, role: str) -> dict[str, object]:
    firewall_files = imds_firewall_files(plan, role)
    return {
        "plan": plan,
        "bootstrap": BOOTSTRAP_PATH,
        # runcmd's PATH (systemd's default) holds /usr/local/sbin and /usr/local/bin.
        "bootstrap_command": BOOTSTRAP_PATH.rsplit("/", 1)[-1],
        "agent_command": AGENT_PATH.rsplit("/", 1)[-1],
        "bootstrap_env": bootstrap_env_text(bootstrap_env(plan, role)),
        "bootstrap_script": bootstrap_source(),
        "imds_firewall_rules_path": imds_firewall.RULES_PATH,
        "imds_firewall_rules": firewall_files[imds_firewall.RULES_PATH],
        "imds_firewall_unit_path": imds_firewall.UNIT_PATH,
        "imds_firewall_unit": firewall_files[imds_firewall.UNIT_PATH],
        "imds_firewall_unit_name": imds_firewall.UNIT_NAME,
        "failed_marker": BOOTSTRAP_FAILED,
        # Boot installs nothing: the image holds all of this, and the first step checks it.
        "image_contract": role_image_contract(plan, role),
    }


def _login_user_data(plan: ClusterPlan, role: str) -> str:
    pool = login_pool_named(plan, role)
    return render_template("cloud-init/login.yaml.j2", pool=pool, **_common(plan, role))


def user_data(plan: ClusterPlan, role: str) -> str:
    """The cloud-init document of ``role`` ("head", a pool name or a login role)."""
    if is_login_role(role):
        return _login_user_data(plan, role)
    pool = None if role == HEAD_ROLE else pool_named(plan, role)  # an unknown role fails first
    common = _common(plan, role)
    if pool is None:
        text = render_template(
            "cloud-init/head.yaml.j2",
            state_volume_device=STATE_VOLUME_DEVICE,
            state_volume_mount=STATE_VOLUME_MOUNT,
            accounting=accounting_plan(plan),
            **common,
        )
    else:
        text = render_template("cloud-init/pool.yaml.j2", pool=pool, **common)
    return text


@cache
def bootstrap_source() -> str:
    """The first-boot script as it goes into the user data: the names it imports from the
    contract are written into it, since nothing of slurmstack is on the node before it runs.
    The same for every role, so made once per process (it was a third of a pool's cost)."""
    return inline_contract(BOOTSTRAP_SOURCE.read_text())


def inline_contract(source: str) -> str:
    """``source`` with its ``from slurmstack.contract import ...`` replaced by the definitions
    it needs: the names it imports and what they use of the contract, in order, a constant as
    an assignment, a function or class as its code without docstrings or comments (to keep the
    user data small), after the standard-library imports they use."""
    tree = ast.parse(source)
    statement = next(
        (s for s in tree.body if isinstance(s, ast.ImportFrom) and s.module == contract.__name__),
        None,
    )
    if statement is None or statement.end_lineno is None:
        raise ValueError(f"the script imports nothing from {contract.__name__}")
    imports: list[str] = []
    definitions: list[str] = []
    seen: set[str] = set()

    def include(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        stdlib, definitions_of = _contract_names()
        if name in stdlib:
            imports.append(stdlib[name])
            return
        node = definitions_of.get(name)
        if node is None:
            value = getattr(contract, name)
            if not isinstance(value, str | int | tuple | frozenset):
                raise TypeError(f"contract.{name} is neither a definition nor a literal")
            # A frozenset's repr follows string hashing, which differs per process: sorted, so
            # the user data (whose change replaces instances) is the same on every run.
            literal = (
                f"frozenset({sorted(value)!r})" if isinstance(value, frozenset) else repr(value)
            )
            definitions.append(f"{name} = {literal}")
            return
        loads = {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        for used in sorted(loads):
            if used in stdlib or used in definitions_of or used in contract.__all__:
                include(used)
        definitions.append(_without_docstrings(node))

    for alias in statement.names:
        include(alias.name)
    lines = source.splitlines(keepends=True)
    inlined = "".join(f"{line}\n" for line in [*sorted(imports), *definitions])
    return "".join(lines[: statement.lineno - 1]) + inlined + "".join(lines[statement.end_lineno :])


@cache
def _contract_names() -> tuple[dict[str, str], dict[str, ast.stmt]]:
    """(name -> the import statement that binds it, name -> definition) of the contract's
    modules (their imports of each other are left out: the names they bind are the contract's)."""
    stdlib: dict[str, str] = {}
    definitions: dict[str, ast.stmt] = {}
    for module in sorted(Path(inspect.getfile(contract)).parent.glob("*.py")):
        for node in ast.parse(module.read_text()).body:
            if isinstance(node, ast.Import):
                stdlib.update({a.asname or a.name: f"import {a.name}" for a in node.names})
            elif (
                isinstance(node, ast.ImportFrom) and node.module != "__future__" and not node.level
            ):
                stdlib.update({a.name: f"from {node.module} import {a.name}" for a in node.names})
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                definitions[node.name] = node
    return stdlib, definitions


def _without_docstrings(definition: ast.stmt) -> str:
    """The code of a definition without docstrings, and without the annotations of functions
    (a dataclass's fields keep theirs: they are its fields)."""
    definition = copy.deepcopy(definition)
    for node in ast.walk(definition):
        if isinstance(node, ast.FunctionDef):
            node.returns = None
            for arg in [*node.args.args, *node.args.kwonlyargs]:
                arg.annotation = None
        if not isinstance(node, ast.FunctionDef | ast.ClassDef):
            continue
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.unparse(definition)
