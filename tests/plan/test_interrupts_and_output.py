"""`slurmstack plan` as a shell runs it: Ctrl-C at any point ends it at once, killed by SIGINT
(the shell shows 130), with nothing printed; a closed pipe or a full disk on stdout ends it
with at most one line and an exit code that is not 1 (1 means an invalid definition).

The commands run through the console script itself (what `pip install` or `uv sync` puts on
PATH), so the entry point's own set-up is what is tested."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/p5-training.yaml"
SCRIPT = Path(sys.executable).with_name("slurmstack")
# An interrupted command must be gone within this long (a hang waits for the timeout).
GONE_WITHIN_SECONDS = 10.0


def _script() -> str:
    if not SCRIPT.is_file():
        pytest.fail(f"no console script at {SCRIPT}: run `uv sync`")
    return str(SCRIPT)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _start(*args: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [_script(), *args],
        cwd=REPO,
        env=_env(),
        stdout=kwargs.pop("stdout", subprocess.PIPE),
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _plan_run() -> tuple[float, str]:
    """How long one whole `plan` takes here, and what it prints."""
    started = time.monotonic()
    done = subprocess.run(
        [_script(), "plan", EXAMPLE], cwd=REPO, env=_env(), capture_output=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return time.monotonic() - started, done.stdout.decode()


SIGINT_BIT = 1 << (signal.SIGINT - 1)
SIGPIPE_BIT = 1 << (signal.SIGPIPE - 1)


def _signal_masks(pid: int) -> tuple[int, int]:
    """(caught, ignored) signal masks of a running process, from /proc."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["SigCgt"], 16), int(fields["SigIgn"], 16)


def _slurmstack_runs(process: subprocess.Popen[str]) -> float:
    """When the command's own code runs: Python has set up (it ignores SIGPIPE, and catches
    SIGINT to raise KeyboardInterrupt) and the entry point has given SIGINT back its default.
    Before that, an interrupt lands in the interpreter's start-up, which reports it itself: a
    fixed delay cannot tell the two apart on a loaded machine (start-up alone took 0.1 s idle
    and can take longer than the first interrupt point under load)."""
    deadline = time.monotonic() + 30
    seen_python, ready = False, 0
    while time.monotonic() < deadline and process.poll() is None:
        try:
            caught, ignored = _signal_masks(process.pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        seen_python = seen_python or bool(caught & SIGINT_BIT)
        # Twice in a row: Python ignores SIGPIPE a moment before it catches SIGINT.
        ready = (
            ready + 1 if not caught & SIGINT_BIT and (seen_python or ignored & SIGPIPE_BIT) else 0
        )
        if ready == 2:
            return time.monotonic()
        time.sleep(0.002)
    if process.poll() is None:
        raise AssertionError("the command never reached its own code within 30 s")
    return time.monotonic()


def test_ctrl_c_at_any_point_of_plan_ends_it_at_once_and_says_nothing() -> None:
    """Interrupted at 10 points spread from the first imports to the report (on main, 2 of 24
    such runs hung and 3 printed a made-up error with exit 1). The interpreter's own start-up,
    before any of slurmstack runs, is left out: Python reports an interrupt there itself.
    An interrupt while the report is being written leaves what was written, as any command
    does: what the interrupted run printed is the start of the whole report, never more."""
    seconds, report = _plan_run()
    points = [0.4, 0.8] + [seconds * (i + 0.5) / 8 for i in range(8)]
    # (benchmarks/bench_interrupts.py interrupts at random points, 24 runs by default)
    outcomes = []
    for delay in points:
        started = time.monotonic()
        process = _start("plan", EXAMPLE)
        runs = _slurmstack_runs(process)  # never earlier than that
        time.sleep(max(0.0, started + delay - runs))
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            out, err = process.communicate(timeout=GONE_WITHIN_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            pytest.fail(f"interrupted after {delay:.2f} s, plan was still running 10 s later")
        outcomes.append((round(delay, 2), process.returncode, round(time.monotonic() - sent, 2)))
        if process.returncode == 0:  # it had finished before the signal came
            continue
        assert process.returncode == -signal.SIGINT, (delay, process.returncode, err)
        assert err == "" and report.startswith(out), (delay, err, out[-300:])
    interrupted = [o for o in outcomes if o[1] == -signal.SIGINT]
    assert len(interrupted) >= len(points) // 2, outcomes


def _child_of(pid: int) -> int:
    deadline = time.monotonic() + 30
    children = Path(f"/proc/{pid}/task/{pid}/children")
    while time.monotonic() < deadline:
        listed = children.read_text().split()
        if listed:
            return int(listed[0])
        time.sleep(0.05)
    raise AssertionError("the shell started no command")


def test_a_shell_reports_130_for_an_interrupted_plan() -> None:
    # A plan takes about 2 s here: signalled after 2 s it had sometimes finished already (CI:
    # ProcessLookupError). Earlier and earlier, until one run is really interrupted.
    outcomes = []
    for delay in (1.0, 0.5, 0.2):
        shell = subprocess.Popen(
            ["bash", "-c", '"$0" plan "$1"; echo "exit $?"', _script(), EXAMPLE],
            cwd=REPO,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        command = _child_of(shell.pid)
        time.sleep(delay)
        try:  # still the shell's child (its pid not reused), then signal it
            if Path(f"/proc/{command}/stat").read_text().rsplit(")", 1)[1].split()[1] == str(
                shell.pid
            ):
                os.kill(command, signal.SIGINT)
        except (FileNotFoundError, ProcessLookupError):  # finished before the signal
            pass
        out, err = shell.communicate(timeout=GONE_WITHIN_SECONDS)
        outcomes.append((delay, out, err))
        if out.splitlines()[-1:] != ["exit 0"]:  # not finished before the signal came
            assert out.splitlines() == ["exit 130"], (out, err)
            return
    pytest.fail(f"plan finished before every interrupt: {outcomes}")


def test_a_background_plan_keeps_ignoring_ctrl_c() -> None:
    """A shell starts background jobs with SIGINT ignored; Ctrl-C at the terminal must not
    reach them, and the entry point leaves that as it found it."""
    process = _start(
        "validate", EXAMPLE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
    )
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert out.splitlines()[-1].startswith("valid: ")


@pytest.mark.parametrize("json_output", [False, True], ids=["tables", "json"])
def test_a_closed_pipe_ends_plan_quietly_with_141(json_output: bool) -> None:
    """`slurmstack plan ... | head -1`: the first line through the pipe, nothing on stderr,
    and 128 + SIGPIPE, as for any writer whose reader left (main: exit 1). The pipe holds
    one page, so the report cannot slip into it whole before the reader leaves."""
    process = subprocess.Popen(
        [_script(), "plan", EXAMPLE, *(["--json"] if json_output else [])],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    fcntl.fcntl(process.stdout.fileno(), fcntl.F_SETPIPE_SZ, 4096)
    first = os.read(process.stdout.fileno(), 4096)
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=600) == 141, err
    assert b"\n" in first and first.strip() and err == ""


@pytest.mark.parametrize(
    "args", [("plan", EXAMPLE), ("plan", EXAMPLE, "--json"), ("validate", EXAMPLE), ("schema",)]
)
def test_a_full_disk_ends_with_one_line_and_74(args: tuple[str, ...]) -> None:
    """`slurmstack plan > /dev/full`: one line that says so, exit 74 (sysexits' EX_IOERR),
    not a traceback and not 1."""
    with open("/dev/full", "w") as full:
        process = _start(*args, stdout=full)
        _out, err = process.communicate(timeout=600)
    assert process.returncode == 74, err
    assert err.splitlines() == ["slurmstack: cannot write the output: No space left on device"]
