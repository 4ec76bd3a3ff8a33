"""The agent's tree: standard library and boto3 only, small modules, and all of it reaches
the nodes."""

from __future__ import annotations

import sys
from pathlib import Path

from slurmstack.node import bootstrap
from slurmstack.render import PACKAGE_DIR, agent_modules, bootstrap_source


def test_agent_is_self_contained() -> None:
    """Standard library and boto3 (botocore with it) only: it runs on nodes without slurmstack
    installed; what it imports of slurmstack (relatively) is shipped with it. The bootstrap imports the contract
    only, and its copy in the user data imports nothing of slurmstack."""
    import ast

    shipped = {m.relative_to(PACKAGE_DIR).with_suffix("").as_posix() for m in agent_modules()}
    for path in [*agent_modules(), Path(bootstrap.__file__)]:
        module = path.relative_to(PACKAGE_DIR).with_suffix("").parts
        tree = ast.parse(path.read_text())
        # Imports for the type checker only (boto3's stubs) do not run on the node.
        tree.body = [
            s
            for s in tree.body
            if not (isinstance(s, ast.If) and ast.unparse(s.test) == "TYPE_CHECKING")
        ]
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level:
                base = module[: len(module) - node.level]
                within = [node.module] if node.module else [a.name for a in node.names]
                for name in within:
                    target = "/".join([*base, *name.split(".")])
                    assert target in shipped or f"{target}/__init__" in shipped, (path, target)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
                if node.module.startswith("slurmstack"):
                    assert (path.name, node.module) == ("bootstrap.py", "slurmstack.contract")
        assert names <= set(sys.stdlib_module_names) | {
            "boto3",
            "botocore",
            "__future__",
            "slurmstack",
        }, path
    inlined = ast.parse(bootstrap_source())
    assert not [
        n for n in ast.walk(inlined) if isinstance(n, ast.ImportFrom) and "slurmstack" in n.module
    ]


def test_agent_modules_stay_small() -> None:
    """Every module the nodes receive (the contract's, the hallway's and every room's), and the
    first-boot script, is at most 300 lines: one job each."""
    for module in [*agent_modules(), Path(bootstrap.__file__)]:
        assert len(module.read_text().splitlines()) <= 300, module.relative_to(PACKAGE_DIR)


def test_the_agent_is_a_hallway_and_seven_rooms() -> None:
    """node/ holds the modules every room shares and the rooms; a new module goes in a room."""
    node = PACKAGE_DIR / "node"
    hallway = {p.stem for p in node.glob("*.py")} - {"__init__"}
    assert hallway == {
        "active", "bootstrap", "cli", "commands", "context", "ec2", "events", "logs", "metrics_file",
        "parameters", "slurm", "subcommand", "system",
    }  # fmt: skip
    rooms = {p.name for p in node.iterdir() if (p / "__init__.py").exists()}
    assert rooms == {
        "boot", "health", "controller", "power", "accounting", "workload", "people", "observe",
    }  # fmt: skip


def _tree_on_disk(package: Path) -> set[str]:
    """Every module the agent's tree holds, found independently of render: the package's
    __init__, the contract's modules, every .py below node/ (subpackages too) but the bootstrap."""
    found = {"__init__.py"}
    found |= {f"contract/{p.name}" for p in (package / "contract").glob("*.py")}
    found |= {
        p.relative_to(package).as_posix()
        for p in (package / "node").rglob("*.py")
        if p.name != "bootstrap.py"
    }
    return found


def test_every_module_of_the_agent_reaches_every_node() -> None:
    """The config store's manifest lists each module for every role: what a node installs."""
    from slurmstack.render import AGENT_DIR, config_store
    from support.examples import example_plan

    expected = {f"{AGENT_DIR}/{m}" for m in _tree_on_disk(PACKAGE_DIR)}
    manifest = config_store(example_plan("p5-training")).manifest
    for role, files in manifest.items():
        assert expected <= set(files), role


def test_a_subpackage_of_the_agent_ships_too(tmp_path: Path, monkeypatch) -> None:
    """A later subpackage reaches the nodes without a change to render."""
    import shutil

    from slurmstack.render import node as node_config

    package = tmp_path / "slurmstack"
    shutil.copytree(PACKAGE_DIR / "node", package / "node")
    shutil.copy(PACKAGE_DIR / "__init__.py", package)
    shutil.copytree(PACKAGE_DIR / "contract", package / "contract")
    (package / "node" / "later").mkdir()
    (package / "node" / "later" / "__init__.py").write_text('"""a later concern"""\n')
    (package / "node" / "later" / "decide.py").write_text("RULES = ()\n")
    monkeypatch.setattr(node_config, "PACKAGE_DIR", package)
    monkeypatch.setattr(node_config, "NODE_DIR", package / "node")
    monkeypatch.setattr(node_config, "BOOTSTRAP_SOURCE", package / "node" / "bootstrap.py")
    files = node_config.agent_files()
    assert f"{node_config.AGENT_DIR}/node/later/decide.py" in files
    # The launchers (the agent's, the HealthCheckProgram's) aside, the tree as on disk.
    shipped = {
        p[len(node_config.AGENT_DIR) + 1 :] for p in files if p.startswith(node_config.AGENT_DIR)
    }
    assert shipped == _tree_on_disk(package)
