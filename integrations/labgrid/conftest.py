"""Options of the linklab probe test, beside labgrid's own (`--lg-env`, `--lg-coordinator`)."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    """Where linklab is, where the artifacts and baselines go, how long a probe runs."""
    group = parser.getgroup("linklab")
    group.addoption(
        "--linklab",
        default=str(ROOT / "target" / "release" / "linklab"),
        help="the linklab binary (default: this tree's target/release/linklab)",
    )
    group.addoption(
        "--results",
        default=str(ROOT / "target" / "labgrid" / "results"),
        help="directory for each board's probe JSON, page and output (the job's artifacts)",
    )
    group.addoption(
        "--baselines",
        default=str(ROOT / "target" / "labgrid" / "baselines"),
        help="directory of BOARD.json baselines; a missing one is recorded by test_baseline",
    )
    group.addoption(
        "--probe-duration",
        type=int,
        default=20,
        help="linklab probe --duration, seconds (default 20)",
    )
    group.addoption(
        "--tolerance",
        default=None,
        help="linklab probe --tolerance, percent (default: probe's own)",
    )


@pytest.fixture(scope="session")
def linklab_options(request):
    """The options above, read once."""
    opt = request.config.option
    return {
        "linklab": pathlib.Path(opt.linklab),
        "results": pathlib.Path(opt.results),
        "baselines": pathlib.Path(opt.baselines),
        "duration": opt.probe_duration,
        "tolerance": opt.tolerance,
    }
