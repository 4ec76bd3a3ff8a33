"""Rules about the node images: the instance type Image Builder builds them on, and the pins of
what they bake."""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, head_facts, pools_with_facts
from slurmstack.findings import Finding
from slurmstack.image_pins import pin_problems
from slurmstack.rules.facts import resolve_facts
from slurmstack.spec import ClusterSpec


def _baked_architectures(spec: ClusterSpec, catalog: Catalog) -> set[str]:
    """Architectures of the nodes that boot a baked image (no AMI of their own)."""
    out = set()
    head = head_facts(spec, catalog)
    if head is not None and (spec.head_node.ami or spec.image.ami) is None:
        out.add(head.architecture.value)
    for pf in pools_with_facts(spec, catalog):
        if (pf.pool.ami or spec.image.ami) is None:
            out.add(pf.facts.architecture.value)
    return out


# why: Image Builder launches the build instance from the parent AMI, which runs only on its
# own architecture; one build type cannot build both an x86_64 and an arm64 image.
@rule
def image_build_instance_type(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    name = spec.image.build_instance_type
    if name is None:
        return
    path = "image.build_instance_type"
    facts = resolve_facts(name, None, catalog)
    if facts is None:
        close = catalog.suggest_instance_type(name)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        yield error(path, f"unknown instance type {name!r}{hint}")
        return
    wanted = _baked_architectures(spec, catalog)
    other = sorted(wanted - {facts.architecture.value})
    if other:
        yield error(
            path,
            f"{name} is {facts.architecture.value}, but the cluster bakes {' and '.join(other)} "
            "images too; leave build_instance_type unset (a default per architecture) or use a "
            f"{'/'.join(sorted(wanted))} type for each",
        )


# why: build.sh refuses a download without a pin it can check, but only on the build instance,
# half an hour into `pulumi up` (VPC, FSx, ... already made); say it before anything is made.
@rule
def image_downloads_pinned(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if not _baked_architectures(spec, catalog):
        return  # every node brings its own AMI: nothing is baked
    for problem in pin_problems():
        yield error(
            "image",
            f"slurmstack's image pins (infra/slurmstack/image_pins.json) have an unpinned "
            f"download, which the bake would refuse: {problem}",
        )


def _baked_keys(spec: ClusterSpec, catalog: Catalog) -> set[str]:
    """Keys (kind-architecture) of the images the cluster bakes (the plan's ImagePlan.key)."""
    out = set()
    head = head_facts(spec, catalog)
    roles = [(spec.head_node.ami, head)] if head is not None else []
    roles += [(pf.pool.ami, pf.facts) for pf in pools_with_facts(spec, catalog)]
    for ami, facts in roles:
        if (ami or spec.image.ami) is None:
            kind = "cpu" if facts.accelerator is None else facts.accelerator.kind
            kind = "nvidia" if kind == "gpu" else kind
            out.add(f"{kind}-{facts.architecture.value.replace('_', '-')}")
    return out


# why: a parent pinned for an image the cluster does not bake does nothing, most likely a
# mistyped key, and the image meant keeps taking the newest parent.
@rule
def image_parent_unused(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    baked = _baked_keys(spec, catalog)
    for key in sorted(spec.image.parents):
        if key not in baked:
            yield error(
                f"image.parents.{key}",
                f"the cluster bakes no {key} image (it bakes: {', '.join(sorted(baked)) or 'none'});"
                " remove this parent or pin the key of an image it bakes",
            )
