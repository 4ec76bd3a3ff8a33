"""Run the real Pulumi program (``infra/__main__.py``) offline and record what it registers.

The program runs exactly as the Pulumi language host runs it (``runpy`` on the program
directory inside ``run_in_stack``), but against Pulumi's mock monitor with stand-in outputs
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
import json
import runpy
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format  # type: ignore[import-untyped]
from pulumi.runtime import config as runtime_config
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs, Mocks
from pulumi.runtime.stack import run_in_stack

from slurmstack.collector import collector_paused
from slurmstack.offline.standins import DEFAULT_REGION, Context, call_stand_in, stand_in

STACK_TYPE = "pulumi:pulumi:Stack"
SUBNET_TYPE = "aws:ec2/subnet:Subnet"
NETWORK_INTERFACE_TYPE = "aws:ec2/networkInterface:NetworkInterface"
PROJECT = "slurmstack"
DEFAULT_STACK = "offline"
CLUSTER_CONFIG_KEY = "slurmstack:cluster"
REGION_CONFIG_KEY = "aws:region"

_SIG = rpc._special_sig_key
_SECRET_SIG = rpc._special_secret_sig


def default_program() -> Path:
    """The program directory (``infra/``, holding ``__main__.py``) of this checkout."""
    here = Path(__file__).resolve()
    program = here.parents[2]
    if not (program / "__main__.py").is_file():
        raise FileNotFoundError(
            f"no Pulumi program next to the slurmstack package (looked for {program}/__main__.py); "
            "run from a checkout of the repository (an editable install)"
        )
    return program


@dataclass(frozen=True)
class Options:
    """The resource options the engine saw for one resource."""

    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool = False
    ignore_changes: tuple[str, ...] = ()
    replace_on_changes: tuple[str, ...] = ()
    additional_secret_outputs: tuple[str, ...] = ()
    # URNs the resource depends on: explicitly (depends_on, expanded over components'
    # children) and in total (also through its inputs).
    depends_on: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordedResource:
    type: str
    name: str
    urn: str
    parent: str | None
    custom: bool
    id: str | None
    inputs: dict[str, Any]  # wire names (camelCase), secrets unwrapped
    outputs: dict[str, Any]
    options: Options
    secret_inputs: tuple[str, ...] = ()  # dotted paths of inputs that were marked secret
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def is_component(self) -> bool:
        return not self.custom

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "name": self.name,
            "urn": self.urn,
            "parent": self.parent,
            "custom": self.custom,
            "id": self.id,
            "inputs": _redact(self.inputs, self.secret_inputs),
            "options": {
                "protect": self.options.protect,
                "retain_on_delete": self.options.retain_on_delete,
                "delete_before_replace": self.options.delete_before_replace,
                "ignore_changes": list(self.options.ignore_changes),
                "depends_on": list(self.options.depends_on),
            },
        }


@dataclass
class OfflineRun:
    """Everything one offline run of the program registered, exported, called and logged."""

    resources: list[RecordedResource]
    outputs: dict[str, Any]
    secret_outputs: tuple[str, ...]
    invokes: list[tuple[str, dict[str, Any]]]
    new_resource_calls: int
    logs: list[tuple[str, str]]
    error: BaseException | None
    stack_urn: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error

    @property
    def custom(self) -> list[RecordedResource]:
        """Provider resources (what `pulumi up` creates in the cloud), not components."""
        return [r for r in self.resources if r.custom]

    def count_by_type(self, *, custom_only: bool = True) -> Counter[str]:
        chosen = self.custom if custom_only else self.resources
        return Counter(r.type for r in chosen)

    def of_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> RecordedResource:
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            raise LookupError(f"expected one {type_} {name or ''}, found {len(found)}")
        return found[0]

    def by_urn(self, urn: str) -> RecordedResource:
        for resource in self.resources:
            if resource.urn == urn:
                return resource
        raise KeyError(urn)

    def children(self, urn: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.parent == urn]

    def descendants(self, urn: str) -> Iterator[RecordedResource]:
        for child in self.children(urn):
            yield child
            yield from self.descendants(child.urn)

    def component_of(self, resource: RecordedResource) -> RecordedResource | None:
        """The nearest enclosing component (None at the stack's top level)."""
        parent = resource.parent
        while parent is not None and parent != self.stack_urn:
            found = self.by_urn(parent)
            if not found.custom:
                return found
            parent = found.parent
        return None

    def error_lines(self) -> list[str]:
        if self.error is None:
            return []
        return [line for line in str(self.error).splitlines() if line.strip()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "resources": [r.to_dict() for r in self.resources],
            "outputs": _redact(self.outputs, self.secret_outputs),
            "error": str(self.error) if self.error is not None else None,
        }


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


def _redact(value: dict[str, Any], secret_paths: tuple[str, ...]) -> dict[str, Any]:
    """A copy with every top-level secret value replaced by ``[secret]``."""
    tops = {path.split(".", 1)[0].split("[", 1)[0] for path in secret_paths}
    return {key: ("[secret]" if key in tops else item) for key, item in value.items()}


class _StandInMocks(Mocks):
    def __init__(self, region: str) -> None:
        self.region = region
        self.new_resource_calls = 0
        self.invokes: list[tuple[str, dict[str, Any]]] = []
        # Facts later stand-ins use: subnet id -> CIDR (instances get addresses inside it),
        # network interface id -> address (an instance launched with it has that address).
        self.known: dict[str, str] = {}
        self._lock = threading.Lock()

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        with self._lock:
            self.new_resource_calls += 1
        if not args.custom:
            return "", {}
        rid, state = stand_in(
            Context(args.typ, args.name, dict(args.inputs), self.region, self.known)
        )
        if args.typ == SUBNET_TYPE and isinstance(args.inputs.get("cidrBlock"), str):
            with self._lock:
                self.known[rid] = args.inputs["cidrBlock"]
        if args.typ == NETWORK_INTERFACE_TYPE:
            with self._lock:
                self.known[rid] = state["privateIp"]
        return rid, state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        with self._lock:
            self.invokes.append((args.token, dict(args.args)))
        return call_stand_in(args.token, dict(args.args), self.region), []


class _RecordingMonitor(MockMonitor):
    """The mock monitor, also keeping the request details the mocks do not see."""

    def __init__(self, mocks: _StandInMocks) -> None:
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
) -> OfflineRun:
    """Run the program with ``definition`` as its ``slurmstack:cluster`` config."""
    return run_program(config_for(definition), program=program, stack=stack)


def run_program(
    config: Mapping[str, Any],
    *,
    program: Path | None = None,
    project: str = PROJECT,
    stack: str = DEFAULT_STACK,
) -> OfflineRun:
    """Run the Pulumi program with the given stack config (``namespace:key`` -> value;
    non-string values are passed as JSON, as the Pulumi CLI does for objects)."""
    program_dir = program or default_program()
    wire_config = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    region = wire_config.get(REGION_CONFIG_KEY, DEFAULT_REGION)
    # A copy of the caller's context: the runtime's context variables (settings, root
    # resource, config) set below vanish with it. The garbage collector is paused for the
    # run, as the program pauses it under `pulumi` (see slurmstack.collector), and resumed
    # after it.
    with collector_paused():
        return contextvars.copy_context().run(
            _run, program_dir, wire_config, region, project, stack
        )


def _run(
    program_dir: Path, config: dict[str, str], region: str, project: str, stack: str
) -> OfflineRun:
    mocks = _StandInMocks(region)
    monitor = _RecordingMonitor(mocks)
    engine = _RecordingEngine()
    settings = runtime_settings.Settings(
        project=project,
        stack=stack,
        monitor=monitor,
        engine=engine,
        dry_run=False,
        organization="organization",
        root_directory=str(program_dir.parent),
    )
    features = monitor.GetDeploymentInfo(None).supportedFeatures  # type: ignore[no-untyped-call]
    settings.monitor_features = set(features)
    runtime_settings.ROOT.set(None)
    runtime_settings.configure(settings)
    runtime_config.set_all_config(config, [])

    def program() -> None:
        runpy.run_path(str(program_dir), run_name="__main__")

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
