"""Pulumi entry point (Pulumi.yaml's ``main: infra/``): runs the program that ships inside the
package (``slurmstack.program``). No logic and no resources here."""

from slurmstack.program import main

main()
