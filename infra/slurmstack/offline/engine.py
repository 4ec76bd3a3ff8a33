"""Run the real Pulumi program (``slurmstack.program``, which ``infra/__main__.py`` runs under
`pulumi`) offline and record what it registers.

The program runs as the Pulumi language host runs it (its ``main`` inside ``run_in_stack``;
a program path given instead runs through ``runpy``), but against Pulumi's mock monitor with stand-in outputs
shaped like AWS's (see ``standins``), with ``preview=False`` so every ``apply`` runs. Each
run gets a fresh Pulumi runtime: the runtime's settings, root resource and config live in
context variables, and the run happens in a copy of the caller's context with its own
event loop, so runs neither see nor disturb each other's state.

Every registered resource is recorded with its type, name, URN, parent, inputs, outputs,
which inputs were secret, and its resource options (protect, retain_on_delete,
delete_before_replace, ignore_changes, explicit depends_on). ``slurmstack plan`` builds its
report from this record; the stack tests assert on it.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import json
import runpy
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from google.protobuf import json_format  # type: ignore[import-untyped]
from pulumi.runtime import config as runtime_config
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.stack import run_in_stack

from slurmstack import program as program_module
from slurmstack.collector import collector_paused
from slurmstack.loader import STACK_CONFIG_KEY, STACK_REGION_KEY
from slurmstack.offline.existing import World, world_for
from slurmstack.offline.mocks import StandInMocks
from slurmstack.offline.reads import ReadingMonitor
from slurmstack.offline.record import OfflineRun, Options, RecordedResource
from slurmstack.offline.standins import DEFAULT_REGION

STACK_TYPE = "pulumi:pulumi:Stack"
PROJECT = "slurmstack"
DEFAULT_STACK = "offline"
CLUSTER_CONFIG_KEY = STACK_CONFIG_KEY
REGION_CONFIG_KEY = STACK_REGION_KEY
OFFLINE_CONFIG_KEY = "slurmstack:offline"

_SIG = rpc._special_sig_key
_SECRET_SIG = rpc._special_secret_sig


def default_program() -> Path:
    """The program's file inside the package (``slurmstack/program.py``), which the project's
    ``infra/__main__.py`` runs: an installed package plans without a checkout."""
    return Path(program_module.__file__ or "program.py").resolve()


def _secret_paths(value: Any, prefix: str = "") -> Iterator[str]:
    """Dotted paths of secret-marked values in a serialized (wire) property map."""
    if isinstance(value, dict):
        if value.get(_SIG) == _SECRET_SIG:
            yield prefix or "<root>"
            return
        for key, item in value.items():
            yield from _secret_paths(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _secret_paths(item, f"{prefix}[{index}]")


class _RecordingMonitor(ReadingMonitor):
    """The mock monitor, also keeping the request details the mocks do not see."""

    def __init__(self, mocks: StandInMocks) -> None:
        super().__init__(mocks)
        self.recorded: list[RecordedResource] = []
        self.stack_urn: str | None = None
        self.stack_outputs: dict[str, Any] = {}
        self.stack_secret_outputs: tuple[str, ...] = ()
        self._record_lock = threading.Lock()

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        urn = response.urn
        if request.type == STACK_TYPE:
            self.stack_urn = urn
            return response
        wire = json_format.MessageToDict(request.object)
        registration = self.resources[urn]
        inputs = rpc.deserialize_properties(request.object)
        property_deps = {
            key: tuple(sorted(deps.urns)) for key, deps in request.propertyDependencies.items()
        }
        through_inputs = {urn_ for deps in property_deps.values() for urn_ in deps}
        options = Options(
            protect=bool(request.protect),
            retain_on_delete=bool(request.retainOnDelete),
            delete_before_replace=bool(request.deleteBeforeReplace),
            ignore_changes=tuple(request.ignoreChanges),
            replace_on_changes=tuple(request.replaceOnChanges),
            additional_secret_outputs=tuple(request.additionalSecretOutputs),
            depends_on=tuple(sorted(u for u in request.dependencies if u not in through_inputs)),
            dependencies=tuple(sorted(request.dependencies)),
            create_timeout=request.customTimeouts.create,
        )
        record = RecordedResource(
            type=request.type,
            name=request.name,
            urn=urn,
            parent=request.parent or None,
            custom=bool(request.custom),
            id=registration.id or None,
            inputs=_plain(inputs),
            outputs=_plain(registration.state),
            options=options,
            secret_inputs=tuple(_secret_paths(wire)),
            property_dependencies=property_deps,
        )
        with self._record_lock:
            self.recorded.append(record)
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        if self.stack_urn is not None and request.urn == self.stack_urn:
            wire = json_format.MessageToDict(request.outputs)
            self.stack_outputs = _plain(rpc.deserialize_properties(request.outputs))
            self.stack_secret_outputs = tuple(_secret_paths(wire))
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]


class _RecordingEngine:
    """Stands in for the engine's log service: keeps what the program logs (info and up)."""

    def __init__(self) -> None:
        self.logs: list[tuple[str, str]] = []

    def Log(self, request: Any) -> None:
        from pulumi.runtime.proto import engine_pb2

        if request.severity == engine_pb2.DEBUG:
            return
        severity = engine_pb2.LogSeverity.Name(request.severity).lower()
        self.logs.append((severity, request.message))


def _plain(value: Any) -> Any:
    """Deserialized property values as plain JSON-like data: secrets unwrapped (their paths
    are recorded separately), unknowns as None. Keys are sorted: a protobuf Struct's map
    comes back in an order that varies from process to process."""
    if isinstance(value, dict) and value.get(_SIG) == _SECRET_SIG:
        return _plain(value.get("value"))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the wire has only doubles; counts and sizes read as ints
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if value == rpc.UNKNOWN:
        return None
    return str(value)


def config_for(definition: Mapping[str, Any], region: str | None = None) -> dict[str, str]:
    """Stack config for a definition: the object under slurmstack:cluster plus aws:region."""
    config = {CLUSTER_CONFIG_KEY: json.dumps(definition)}
    chosen = region or definition.get("region")
    if isinstance(chosen, str):
        config[REGION_CONFIG_KEY] = chosen
    return config


def run_definition(
    definition: Mapping[str, Any],
    *,
    program: Path | None = None,
    stack: str = DEFAULT_STACK,
    world: World | None = None,
) -> OfflineRun:
    """Run the program with ``definition`` as its ``slurmstack:cluster`` config. ``world``:
    what exists before the stack (default: everything the definition names, reachable)."""
    return run_program(
        config_for(definition), program=program, stack=stack, world=world or world_for(definition)
    )


def run_program(
    config: Mapping[str, Any],
    *,
    program: Path | None = None,
    project: str = PROJECT,
    stack: str = DEFAULT_STACK,
    world: World | None = None,
) -> OfflineRun:
    """Run the Pulumi program with the given stack config (``namespace:key`` -> value;
    non-string values are passed as JSON, as the Pulumi CLI does for objects). ``program``: a
    program directory or file to run instead of the packaged one (as `pulumi` runs a path)."""
    wire_config = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    # The program makes no AWS call offline (its change preflight reads the last deployment).
    wire_config.setdefault(OFFLINE_CONFIG_KEY, "true")
    region = wire_config.get(REGION_CONFIG_KEY, DEFAULT_REGION)
    # A copy of the caller's context: the runtime's context variables (settings, root
    # resource, config) set below vanish with it. The garbage collector is paused for the
    # run, as the program pauses it under `pulumi` (see slurmstack.collector), and resumed
    # after it.
    with collector_paused():
        result = contextvars.copy_context().run(
            _run, program, wire_config, region, project, stack, world
        )
    if result.error is not None:
        # A failed program leaves tasks whose exceptions nobody retrieved, in reference
        # cycles: collect them now, so their finalizers (asyncio logs them) run here and not
        # inside whatever the caller does next (CPython 3.11's AST constructor, for one,
        # fails when a collection runs Python code in the middle of a parse).
        gc.collect()
    return result


def _run(
    program_path: Path | None,
    config: dict[str, str],
    region: str,
    project: str,
    stack: str,
    world: World | None = None,
) -> OfflineRun:
    mocks = StandInMocks(region, world)
    monitor = _RecordingMonitor(mocks)
    engine = _RecordingEngine()
    settings = runtime_settings.Settings(
        project=project,
        stack=stack,
        monitor=monitor,
        engine=engine,
        dry_run=False,
        organization="organization",
        root_directory=str((program_path or default_program()).parent),
    )
    features = monitor.GetDeploymentInfo(None).supportedFeatures  # type: ignore[no-untyped-call]
    settings.monitor_features = set(features)
    runtime_settings.ROOT.set(None)
    runtime_settings.configure(settings)
    runtime_config.set_all_config(config, [])

    def program() -> None:
        if program_path is None:
            program_module.main()
        else:
            runpy.run_path(str(program_path), run_name="__main__")

    error: BaseException | None = None
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(run_in_stack(program))
    except Exception as exc:
        error = exc
    finally:
        _close_loop(loop)

    return OfflineRun(
        # Registration order depends on thread scheduling; URN order does not.
        resources=sorted(monitor.recorded, key=lambda r: r.urn),
        outputs=dict(monitor.stack_outputs),
        secret_outputs=monitor.stack_secret_outputs,
        invokes=list(mocks.invokes),
        new_resource_calls=mocks.new_resource_calls,
        logs=list(engine.logs),
        error=error,
        stack_urn=monitor.stack_urn,
        reads=list(monitor.reads),
    )


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()
    asyncio.set_event_loop(None)


__all__ = [
    "OfflineRun",
    "Options",
    "RecordedResource",
    "config_for",
    "default_program",
    "run_definition",
    "run_program",
]
