"""The Pulumi program: read the definition from stack config, validate, plan, build.

`pulumi preview` / `pulumi up` run it through ``infra/__main__.py`` (the project's ``main``),
and `slurmstack plan` runs ``main`` itself under the offline engine; it ships inside the
package, so an installed ``slurmstack`` plans without a checkout. Everything it creates comes
from ``SlurmCluster``; an invalid definition stops the program before any resource is
registered, with every problem as `path: message`.

Two settings make `pulumi preview`/`up` (and `slurmstack plan`) faster without changing what
is registered: the garbage collector is paused for the program (``slurmstack.collector``
says why that is safe), and the program's pending outputs are awaited once each by its
``pulumi.run`` entry point before the SDK's own drain rescans them
(``slurmstack.stack.drain``).
"""

import threading
from typing import Any

import pulumi

from slurmstack.change.guard import ACCEPT_KEY
from slurmstack.collector import pause_for_program
from slurmstack.findings import Level
from slurmstack.loader import STACK_CONFIG_NAME, STACK_CONFIG_NAMESPACE
from slurmstack.plan import build_plan
from slurmstack.stack import deployed, drain
from slurmstack.stack.cluster import SlurmCluster
from slurmstack.stack.outputs import export_outputs
from slurmstack.stack.preflight import preflight
from slurmstack.validate import validate_object

CONFIG_NAMESPACE, CONFIG_KEY = STACK_CONFIG_NAMESPACE, STACK_CONFIG_NAME


# The offline run of a large cluster takes seconds; far more means something is stuck.
SELF_RUN_TIMEOUT_SECONDS = 600


def offline_self_run(definition: dict[str, Any]) -> Any:
    """This program run offline on the same definition (what `pulumi up` is about to
    register, with every input), in a thread: its own Pulumi runtime and event loop, outside
    the ones `pulumi up` is running. The offline run skips this preflight (slurmstack:offline)."""
    from slurmstack.offline.engine import run_definition

    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(run_definition(definition)))
    thread.start()
    thread.join(SELF_RUN_TIMEOUT_SECONDS)
    if not result:
        raise pulumi.RunError("preflight: the offline run of the program did not finish")
    if not result[0].ok:
        raise pulumi.RunError(
            f"preflight: the offline run of the program failed: {result[0].error}"
        )
    return result[0]


def main() -> SlurmCluster:
    """Build the cluster the stack config defines; the component is returned for unit tests
    under Pulumi's mocks (docs/testing-with-mocks.md)."""
    pause_for_program()
    definition = pulumi.Config(CONFIG_NAMESPACE).require_object(CONFIG_KEY)
    result = validate_object(definition, source=f"{CONFIG_NAMESPACE}:{CONFIG_KEY}")
    for finding in result.findings:
        if finding.level is Level.WARNING:
            pulumi.log.warn(finding.line())
    if not result.ok or result.spec is None:
        lines = [f.line() for f in result.findings if f.level is Level.ERROR]
        raise pulumi.RunError(
            f"{CONFIG_NAMESPACE}:{CONFIG_KEY} is not a valid cluster definition:\n"
            + "\n".join(lines)
        )
    plan = build_plan(result.spec)
    problems = preflight(plan, pulumi.Config("aws").get("region"))
    if problems:
        raise pulumi.RunError("\n".join(problems))
    own = pulumi.Config(CONFIG_NAMESPACE)
    record = None
    offline = own.get_bool(deployed.OFFLINE_KEY)
    # Under `pulumi up` (a real engine), or a test that says it stands for one (offline false);
    # not in the offline engine's own run, nor under a team's unit tests with Pulumi's mocks.
    if offline is False or (offline is None and not under_unit_test_mocks()):
        # The change preflight (slurmstack.stack.deployed): refuse what would replace
        # protected storage or collide with a running instance refresh, before any resource.
        accepted = set(own.get_object(ACCEPT_KEY) or [])
        record, problems = deployed.change_preflight(
            offline_self_run(definition), plan, deployed.AwsObserver(plan.region), accepted
        )
        if problems:
            raise pulumi.RunError("\n".join(problems))
    cluster = SlurmCluster(plan)
    deployed.register_record(plan, cluster.bucket.bucket, record, after=cluster)
    export_outputs(cluster)
    register_drain()
    return cluster


def under_unit_test_mocks() -> bool:
    """True under Pulumi's unit-testing pattern (``pulumi.runtime.set_mocks``): there is no
    deployment to compare with and no AWS to ask, so the change preflight does not run."""
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.settings import get_monitor

    return isinstance(get_monitor(), MockMonitor)


def register_drain() -> None:
    """Await the pending outputs before the SDK's own drain, where the engine allows it.

    ``pulumi.run`` (SDK 3.254 and later) takes one entry point while the program runs under
    `pulumi` or the offline engine. Under Pulumi's unit-testing pattern
    (``pulumi.runtime.set_mocks``, then the program, then ``@pulumi.runtime.test``) the root
    stack was finished before the program started, which closes that registration: there the
    outputs are awaited as they were before ``pulumi.run`` existed, by the tests themselves
    and the SDK's drain. The drain only saves time; skipping it changes nothing registered.
    """
    if not hasattr(pulumi, "run"):  # an SDK older than 3.254
        return
    try:
        pulumi.run(drain.drain_pending_outputs)
    except pulumi.RunError:
        return


if __name__ == "__main__":
    main()
