#!/usr/bin/python3
"""systemctl on a virtual-cluster node: a stand-in for systemd (a namespace has no init system).

It reads the same unit files systemd would (/etc/systemd/system, then /lib/systemd/system, with
drop-ins from <unit>.d/*.conf) and runs what they say: ConditionPathExists, Requires and the
units linked in <unit>.requires/ (started first; if one fails, the unit does not start),
RequiresMountsFor (must be mounted), Environment/EnvironmentFile, User/Group,
RuntimeDirectory and StateDirectory (under /run and /var/lib), Limit*, ExecStartPre, then
ExecStart as Type says (simple: left running; notify: left running once it says READY=1 on the
socket NOTIFY_SOCKET names, a listener keeping that socket for MAINPID= as long as the service
runs; forking: waited for, main pid from PIDFile; oneshot: run to the end). Enabling makes the
[Install] WantedBy and RequiredBy links systemd makes (<target>.wants/, <unit>.requires/).
Timers are enabled and started but never fire.

Verbs: start stop restart reload enable disable is-active is-enabled mask daemon-reload.
Standard library only: it runs on the node's system python.
"""

import contextlib
import grp
import os
import pwd
import re
import resource
import shlex
import signal
import socket
import subprocess
import sys
import time

UNIT_DIRS = ("/etc/systemd/system", "/lib/systemd/system")
STATE = "/run/vcluster-units"  # <unit>.pid of running services, <unit>.active for the rest
LOGS = "/var/log/vcluster"  # <unit>.log: a unit's output, as the journal would keep it
STOP_SECONDS = 15
NOTIFY_SECONDS = 180  # a notify service's time to say READY=1 (a loaded machine is slow)
NEW_MAIN_SECONDS = 10  # after the main process ends, how long a MAINPID= may still come
LIMITS = {
    "LimitNOFILE": resource.RLIMIT_NOFILE,
    "LimitMEMLOCK": resource.RLIMIT_MEMLOCK,
    "LimitSTACK": resource.RLIMIT_STACK,
}


class UnitError(Exception):
    pass


def read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def unit_name(name: str) -> str:
    return name if "." in name else f"{name}.service"


def unit_file(name: str) -> str | None:
    for directory in UNIT_DIRS:
        path = os.path.join(directory, name)
        if os.path.exists(path) or os.path.islink(path):
            return path
    return None


def load(name: str) -> dict[str, list[str]]:
    """'Section.Key' -> values, from the unit file and its drop-ins (an empty value resets)."""
    path = unit_file(name)
    if path is None or os.path.realpath(path) == "/dev/null":
        raise UnitError(f"Unit {name} not found." if path is None else f"Unit {name} is masked.")
    files = [path]
    for directory in UNIT_DIRS:
        dropins = os.path.join(directory, f"{name}.d")
        if os.path.isdir(dropins):
            files += sorted(os.path.join(dropins, f) for f in os.listdir(dropins))
    unit: dict[str, list[str]] = {}
    for file in files:
        section = ""
        # A line ending in a backslash goes on in the next one (mariadb.service's ExecStart).
        for raw in read(file).replace("\\\n", " ").splitlines():
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            key, _, value = line.partition("=")
            values = unit.setdefault(f"{section}.{key.strip()}", [])
            if value.strip():
                values.append(value.strip())
            else:
                values.clear()
    return unit


def first(unit: dict[str, list[str]], key: str, default: str = "") -> str:
    values = unit.get(key) or [default]
    return values[-1]


def environment(unit: dict[str, list[str]]) -> dict[str, str]:
    env = dict(os.environ)
    for line in unit.get("Service.Environment", []):
        for word in shlex.split(line):
            key, _, value = word.partition("=")
            env[key] = value
    for spec in unit.get("Service.EnvironmentFile", []):
        optional, path = spec.startswith("-"), spec.lstrip("-")
        if not os.path.exists(path):
            if optional:
                continue
            raise UnitError(f"EnvironmentFile {path} is missing")
        for line in read(path).splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                key, _, value = line.partition("=")
                env[key.strip()] = value.strip().strip('"')
    return env


def command(line: str, env: dict[str, str]) -> tuple[list[str], bool]:
    """An Exec line as systemd reads it: "-" ignores failure; ${X} is replaced inside a word,
    a word that is only $X splits into the value's words."""
    ignore = line.startswith("-")
    words = []
    for word in shlex.split(line.lstrip("-@+!")):
        whole = re.fullmatch(r"\$(\w+)", word)
        if whole:
            words += env.get(whole.group(1), "").split()
        else:
            words.append(re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), word))
    return words, ignore


def as_user(unit: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    user, group = first(unit, "Service.User"), first(unit, "Service.Group")
    limits = {key: first(unit, f"Service.{key}") for key in LIMITS if unit.get(f"Service.{key}")}

    def prepare() -> None:
        for key, value in limits.items():
            amount = resource.RLIM_INFINITY if value == "infinity" else int(value)
            _, hard = resource.getrlimit(LIMITS[key])
            if hard != resource.RLIM_INFINITY and (
                amount == resource.RLIM_INFINITY or amount > hard
            ):
                amount = hard  # this machine gives no CAP_SYS_RESOURCE: as far as it allows
            resource.setrlimit(LIMITS[key], (amount, amount))
        if user:
            entry = pwd.getpwnam(user)
            os.setgid(grp.getgrnam(group).gr_gid if group else entry.pw_gid)
            os.initgroups(user, entry.pw_gid)
            os.setuid(entry.pw_uid)

    return prepare


def pid_of(name: str) -> int | None:
    path = os.path.join(STATE, f"{name}.pid")
    if not os.path.exists(path):
        return None
    pid = int(read(path))
    try:
        with open(f"/proc/{pid}/stat") as handle:
            alive = handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone, or going (ESRCH)
        alive = False
    return pid if alive else None


def is_active(name: str) -> bool:
    return pid_of(name) is not None or os.path.exists(os.path.join(STATE, f"{name}.active"))


def mounted(path: str) -> bool:
    points = [line.split()[4] for line in read("/proc/self/mountinfo").splitlines()]
    return os.path.realpath(path) in points


def note(log, what: str) -> None:  # type: ignore[no-untyped-def]
    """A line in the unit's log saying what systemctl does when (the journal's timestamps)."""
    stamp = time.strftime("%H:%M:%S", time.localtime()) + f".{int(time.time() * 1000) % 1000:03d}"
    log.write(f"systemctl (virtual cluster) {stamp}: {what}\n".encode())
    log.flush()


def run(words: list[str], unit: dict[str, list[str]], env: dict[str, str], log) -> int:  # type: ignore[no-untyped-def]
    note(log, f"running {shlex.join(words)}")
    done = subprocess.run(
        words, env=env, stdout=log, stderr=log, preexec_fn=as_user(unit), timeout=900
    )
    return done.returncode


def start(name: str) -> None:
    if is_active(name):
        return
    os.makedirs(STATE, exist_ok=True)
    if name.endswith(".timer"):
        load(name)
        open(os.path.join(STATE, f"{name}.active"), "w").close()
        return
    unit = load(name)
    # A condition with "|" is a triggering one: of those, one must hold (systemd.unit(5)).
    conditions = unit.get("Unit.ConditionPathExists", [])
    triggering = [c[1:] for c in conditions if c.startswith("|")]
    for path in [c for c in conditions if not c.startswith("|")]:
        if os.path.exists(path.lstrip("!")) == path.startswith("!"):
            return  # systemd skips the unit, without an error
    if triggering and all(os.path.exists(p.lstrip("!")) == p.startswith("!") for p in triggering):
        return
    for required in requirements(name, unit):
        start(required)
    for path in " ".join(unit.get("Unit.RequiresMountsFor", [])).split():
        if not mounted(path):
            raise UnitError(f"{name} requires {path} to be mounted")
    for key, base in (("RuntimeDirectory", "/run"), ("StateDirectory", "/var/lib")):
        for directory in " ".join(unit.get(f"Service.{key}", [])).split():
            path = os.path.join(base, directory)
            os.makedirs(path, exist_ok=True)
            os.chmod(path, int(first(unit, f"Service.{key}Mode", "0755"), 8))
            if first(unit, "Service.User"):
                entry = pwd.getpwnam(first(unit, "Service.User"))
                os.chown(path, entry.pw_uid, entry.pw_gid)
    os.makedirs(LOGS, exist_ok=True)
    with open(os.path.join(LOGS, f"{name}.log"), "ab") as log:
        pid = run_service(name, unit, log)
    if pid is not None:
        with open(os.path.join(STATE, f"{name}.pid"), "w") as handle:
            handle.write(str(pid))


def requirements(name: str, unit: dict[str, list[str]]) -> list[str]:
    """Units ``name`` requires: its Requires=, and the units enabled with RequiredBy=name
    (links in <name>.requires/, as systemd reads them)."""
    required = [unit_name(u) for u in " ".join(unit.get("Unit.Requires", [])).split()]
    for directory in UNIT_DIRS:
        links = os.path.join(directory, f"{name}.requires")
        if os.path.isdir(links):
            required += sorted(f for f in os.listdir(links) if f not in required)
    return required


def run_service(name: str, unit: dict[str, list[str]], log) -> int | None:  # type: ignore[no-untyped-def]
    """ExecStartPre, then ExecStart as Type says; the main pid of a service left running.
    Environment files are read again for ExecStart, after ExecStartPre ended, as systemd
    does (systemd.exec(5), EnvironmentFile=): a pre-start step may write them."""
    env = environment(unit)
    for line in unit.get("Service.ExecStartPre", []):
        words, ignore = command(line, env)
        # "+": full privileges, whatever User= says (systemd.service(5)).
        as_unit = (
            {k: v for k, v in unit.items() if k != "Service.User"} if line.startswith("+") else unit
        )
        if run(words, as_unit, env, log) != 0 and not ignore:
            raise UnitError(f"{name}: ExecStartPre {' '.join(words)} failed (see {log.name})")
    kind = first(unit, "Service.Type", "simple")
    env = environment(unit)
    starts = [command(line, env)[0] for line in unit.get("Service.ExecStart", [])]
    if kind == "oneshot":
        for words in starts:
            if run(words, unit, env, log) != 0:
                raise UnitError(f"{name}: {' '.join(words)} failed (see {log.name})")
        if first(unit, "Service.RemainAfterExit") in ("yes", "true"):
            open(os.path.join(STATE, f"{name}.active"), "w").close()
        return None
    if kind == "forking":
        if run(starts[0], unit, env, log) != 0:
            raise UnitError(f"{name}: {' '.join(starts[0])} failed (see {log.name})")
        return main_pid(first(unit, "Service.PIDFile"), name)
    if kind == "notify":
        return start_notify(name, starts[0], unit, env, log)
    note(log, f"starting {shlex.join(starts[0])}")
    process = subprocess.Popen(
        starts[0],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        preexec_fn=as_user(unit),
        start_new_session=True,
    )
    time.sleep(0.3)
    if process.poll() is not None:
        raise UnitError(f"{name}: {starts[0][0]} exited {process.returncode} (see {log.name})")
    return process.pid


def notices(sock: socket.socket) -> dict[str, str]:
    """One sd_notify(3) message ({} when none came within the socket's timeout)."""
    try:
        data = sock.recv(4096).decode(errors="replace")
    except TimeoutError:
        return {}
    return dict(line.split("=", 1) for line in data.splitlines() if "=" in line)


def start_notify(
    name: str, words: list[str], unit: dict[str, list[str]], env: dict[str, str], log
) -> int:  # type: ignore[no-untyped-def]
    """Type=notify (Slurm's own units run its daemons with --systemd): started with
    NOTIFY_SOCKET, active once it sends READY=1. MAINPID= moves the main process, as Slurm
    24.05+ does when it restarts itself for a reconfigure, so the socket stays open while the
    service runs (a listener process of the node's own, as systemd keeps it)."""
    path = os.path.join(STATE, f"{name}.notify")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    os.chmod(path, 0o666)  # the service's User= sends to it
    sock.settimeout(0.5)
    note(log, f"starting {shlex.join(words)} (notify)")
    process = subprocess.Popen(
        words,
        env={**env, "NOTIFY_SOCKET": path},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        preexec_fn=as_user(unit),
        start_new_session=True,
    )
    main, deadline = process.pid, time.monotonic() + NOTIFY_SECONDS
    while True:
        fields = notices(sock)
        main = int(fields.get("MAINPID", main))
        if fields.get("READY") == "1":
            break
        if main == process.pid and process.poll() is not None:
            raise UnitError(f"{name}: {words[0]} exited {process.returncode} (see {log.name})")
        if time.monotonic() > deadline:
            raise UnitError(f"{name}: no READY=1 in {NOTIFY_SECONDS} s (see {log.name})")
    if os.fork() == 0:
        keep_notified(name, sock, main)
    sock.close()
    return main


def keep_notified(name: str, sock: socket.socket, main: int) -> None:
    """The listener: records each new main pid until the service's main process is gone (and
    no new one was named within NEW_MAIN_SECONDS). Detached from the caller's output, whose
    readers wait for its end."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    pid_file = os.path.join(STATE, f"{name}.pid")
    gone_since = None
    while True:
        fields = notices(sock)
        if "MAINPID" in fields:
            main, gone_since = int(fields["MAINPID"]), None
            with open(pid_file, "w") as handle:
                handle.write(str(main))
        if os.path.exists(f"/proc/{main}") and not _zombie(main):
            continue
        gone_since = gone_since or time.monotonic()
        if time.monotonic() - gone_since > NEW_MAIN_SECONDS:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(sock.getsockname())
            os._exit(0)


def main_pid(pid_file: str, name: str) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if os.path.exists(pid_file) and read(pid_file).strip():
            return int(read(pid_file))
        time.sleep(0.1)
    raise UnitError(f"{name}: no pid in {pid_file}")


def stop(name: str) -> None:
    pid = pid_of(name)
    for leftover in (f"{name}.pid", f"{name}.active"):
        path = os.path.join(STATE, leftover)
        if os.path.exists(path):
            os.unlink(path)
    if pid is None:
        return
    os.makedirs(LOGS, exist_ok=True)
    with open(os.path.join(LOGS, f"{name}.log"), "ab") as log:
        note(log, f"stopping {pid}")
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:  # it ended in between
            note(log, f"{pid} had already ended")
            return
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline:
            if not os.path.exists(f"/proc/{pid}") or _zombie(pid):
                note(log, f"{pid} stopped")
                return
            time.sleep(0.1)
        note(log, f"{pid} still running after {STOP_SECONDS} s: killed")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _zombie(pid: int) -> bool:
    try:
        return read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone, or going (ESRCH)
        return True


def reload(name: str) -> None:
    pid = pid_of(name)
    if pid is None:
        raise UnitError(f"{name} is not active, cannot reload")
    unit = load(name)
    env = {**environment(unit), "MAINPID": str(pid)}
    for line in unit.get("Service.ExecReload", []):
        subprocess.run(command(line, env)[0], env=env, check=True)


def wants_links(name: str) -> list[str]:
    """The links enabling makes: <target>.wants/<name> for WantedBy, <unit>.requires/<name>
    for RequiredBy."""
    unit = load(name)
    links = []
    for key, kind in (("Install.WantedBy", "wants"), ("Install.RequiredBy", "requires")):
        for target in " ".join(unit.get(key, [])).split():
            links.append(os.path.join(UNIT_DIRS[0], f"{target}.{kind}", name))
    return links


def enable(name: str) -> None:
    for link in wants_links(name):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if not os.path.lexists(link):
            os.symlink(unit_file(name), link)


def disable(name: str) -> None:
    if unit_file(name) is None:
        return
    for link in wants_links(name):
        if os.path.lexists(link):
            os.unlink(link)


def enabled_state(name: str) -> str:
    path = unit_file(name)
    if path is None:
        return "not-found"
    if os.path.realpath(path) == "/dev/null":
        return "masked"
    links = wants_links(name)
    if not links:
        return "static"
    return "enabled" if any(os.path.lexists(link) for link in links) else "disabled"


def main(argv: list[str]) -> int:
    flags = {a for a in argv if a.startswith("-")}
    words = [a for a in argv if not a.startswith("-")]
    if not words:
        print("systemctl (virtual cluster): a verb is required", file=sys.stderr)
        return 1
    verb, units = words[0], [unit_name(u) for u in words[1:]]
    quiet = bool(flags & {"-q", "--quiet"})
    try:
        if verb == "daemon-reload":
            return 0  # unit files are read afresh on every call
        if verb == "is-active":
            states = ["active" if is_active(u) else "inactive" for u in units]
            if not quiet:
                print("\n".join(states))
            return 0 if all(s == "active" for s in states) else 3
        if verb == "is-enabled":
            states = [enabled_state(u) for u in units]
            if not quiet:
                print("\n".join(states))
            return 0 if all(s in ("enabled", "static") for s in states) else 1
        for unit in units:
            if verb == "start":
                start(unit)
            elif verb == "stop":
                stop(unit)
            elif verb in ("restart", "reload-or-restart"):
                stop(unit)
                start(unit)
            elif verb == "reload":
                reload(unit)
            elif verb == "enable":
                enable(unit)
                if "--now" in flags:
                    start(unit)
            elif verb == "disable":
                disable(unit)
                if "--now" in flags:
                    stop(unit)
            elif verb == "mask":
                os.makedirs(UNIT_DIRS[0], exist_ok=True)
                os.symlink("/dev/null", os.path.join(UNIT_DIRS[0], unit))
            else:
                print(f"systemctl (virtual cluster): unknown verb {verb}", file=sys.stderr)
                return 1
    except (UnitError, OSError, subprocess.SubprocessError) as exc:
        print(f"systemctl (virtual cluster): {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
