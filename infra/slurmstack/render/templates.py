"""The Jinja2 environment every generated file is rendered in: StrictUndefined (a typo fails,
never renders blank), the templates of the repository (or the copy installed in the package),
the filters the file formats need, and the contract as the global ``contract``."""

from __future__ import annotations

import re
import shlex
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from slurmstack import contract

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def templates_dir() -> Path:
    """The copy installed inside the package (a wheel), else the repository's templates/."""
    installed = PACKAGE_DIR / "templates"
    if installed.is_dir():
        return installed
    return PACKAGE_DIR.parents[1] / "templates"


# What an installer or Python itself adds beside a template's Python file: pip compiles every
# `.py` of a wheel, the job programs under templates/jobs/lib included, into __pycache__/.
NOT_TEMPLATES = ("__pycache__", "*.pyc", "*.pyo")


def template_files(directory: str) -> list[Path]:
    """The templates (and verbatim files) of one directory under templates_dir(), sorted:
    regular files only, never a bytecode cache or another subdirectory."""
    return sorted(
        path
        for path in (templates_dir() / directory).iterdir()
        if path.is_file() and not any(path.match(pattern) for pattern in NOT_TEMPLATES)
    )


def nccl_comment(text: str) -> str:
    # NCCL's nccl.conf reader sets an environment variable for every line that holds an
    # equals sign, comments included, so comments are written without one.
    return text.replace(">=", "at least ").replace("<=", "at most ").replace("=", " is ")


def dq_escape(text: str) -> str:
    """Safe inside a double-quoted shell string."""
    return re.sub(r'([\\"$`])', r"\\\1", text)


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["shell_quote"] = shlex.quote
    env.filters["nccl_comment"] = nccl_comment
    env.filters["dq_escape"] = dq_escape
    env.globals["contract"] = contract
    return env


def render_template(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)
