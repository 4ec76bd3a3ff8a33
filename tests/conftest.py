import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "infra"))
# The repository's tools (tools/docs.py, the generated documentation), which tests import.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools"))


# Where the suite's time goes, printed at the end of every run: seconds per marker (a test
# with two markers counts under both; "unmarked" is everything else). CI's budget is 90
# minutes on 2 cores, so the next person sees which part grows.
_SECONDS_BY_MARKER: dict[str, float] = {}
_MARKERS_BY_TEST: dict[str, list[str]] = {}


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    registered = {line.split(":")[0] for line in config.getini("markers")}
    for item in items:
        names = {m.name for m in item.iter_markers()} & registered
        _MARKERS_BY_TEST[item.nodeid] = sorted(names) or ["unmarked"]


def pytest_runtest_logreport(report):  # type: ignore[no-untyped-def]
    for marker in _MARKERS_BY_TEST.get(report.nodeid, ["unmarked"]):
        _SECONDS_BY_MARKER[marker] = _SECONDS_BY_MARKER.get(marker, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):  # type: ignore[no-untyped-def]
    if not _SECONDS_BY_MARKER:
        return
    terminalreporter.section("seconds per marker (setup, call and teardown)")
    for marker, seconds in sorted(_SECONDS_BY_MARKER.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{marker:>12}: {seconds:8.1f}")
