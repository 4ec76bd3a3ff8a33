"""Resolve the instance facts of a node: the definition's own facts win, else the catalog."""

from __future__ import annotations

from slurmstack.catalog import Catalog, InstanceFacts


def resolve_facts(
    instance_type: str, given: InstanceFacts | None, catalog: Catalog
) -> InstanceFacts | None:
    """Facts for ``instance_type``: the definition's ``instance_facts`` if given, else the catalog's."""
    if given is not None:
        return given
    return catalog.instance(instance_type)
