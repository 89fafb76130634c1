"""`linklab probe` on a labgrid target: the board is booted to "network up" by
LinklabStrategy, probed with `--baseline`, and probe's verdict becomes the test's.

probe's exit code is the verdict: 0 passes, 3 (a figure worse than the baseline beyond the
tolerance) fails naming each worse figure from probe's JSON, anything else fails as an error
of the probe run. No threshold of this file's own decides a figure: only probe's comparison.
The JSON, the page and probe's output are kept under --results/BOARD/ for the job's artifacts.
"""

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

# Exit codes of `linklab probe` (crates/linklab/README.md).
PROBE_OK = 0
PROBE_WORSE_THAN_BASELINE = 3


@dataclass
class ProbeRun:
    """One finished `linklab probe` run and where its outputs are."""

    argv: list
    code: int
    stdout: str
    stderr: str
    wall: float
    json_path: Path
    page_path: Path

    def document(self):
        """probe's JSON document, or None when it wrote none."""
        if not self.json_path.is_file():
            return None
        return json.loads(self.json_path.read_text())

    def said(self):
        """probe's own words for a failure message."""
        return (self.stderr.strip() or self.stdout.strip()[-2000:]) or "(nothing)"


@dataclass
class Device:
    """A board at "network up": what the tests need of it."""

    board: str
    address: str
    late_log: Path
    # The strategy's check after a run: None, or the words for a hung board (power-cycled).
    recover_if_hung: object

    def late_lines(self):
        """QEMU's "guest is now late" lines so far in this session (qemu/late-aside)."""
        if not self.late_log.is_file():
            return []
        return self.late_log.read_text().splitlines()

    def fell_behind(self):
        """'; QEMU fell behind ...' for a failure message when the host did not hold the
        board's fixed clock, else ''."""
        lines = self.late_lines()
        if not lines:
            return ""
        return (
            f"; QEMU fell behind real time in this session ({len(lines)} times, last "
            f"{lines[-1].strip()!r}, {self.late_log}): the host, not the firmware, set figures"
        )


def run_probe(opts, address, out_dir, baseline=None):
    """Runs `linklab probe ADDRESS` with its JSON and page in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "probe.json"
    page_path = out_dir / "probe.html"
    for old in (json_path, page_path):
        old.unlink(missing_ok=True)
    argv = [str(opts["linklab"]), "probe", address, "--duration", str(opts["duration"])]
    argv += ["--json", str(json_path), "-o", str(page_path)]
    if baseline is not None:
        argv += ["--baseline", str(baseline)]
        if opts["tolerance"] is not None:
            argv += ["--tolerance", str(opts["tolerance"])]
    began = time.monotonic()
    # probe promises to end within --duration + 10 s; the margin here is for a loaded host.
    limit = opts["duration"] + 30
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=limit, check=False)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as late:
        code, stdout = -9, _text(late.stdout)
        stderr = f"{_text(late.stderr)}linklab probe did not end within {limit} s (killed)"
    run = ProbeRun(
        argv,
        code,
        stdout,
        stderr,
        time.monotonic() - began,
        json_path,
        page_path,
    )
    (out_dir / "probe.stdout.txt").write_text(run.stdout)
    (out_dir / "probe.stderr.txt").write_text(run.stderr)
    print(f"$ {' '.join(argv)}\n{run.stdout}{run.stderr}exit {run.code}, {run.wall:.1f} s")
    return run


def _text(output):
    """A timed-out run's captured output as text."""
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def fail_if_hung(device, run):
    """Fails the test when the board hung during the run (it no longer answers): the strategy
    has power-cycled it once, and the run's result is not kept."""
    hung = device.recover_if_hung()
    if hung:
        pytest.fail(f"{hung}; linklab probe exit {run.code}: {run.said()[-300:]}")


def attach(record_property, run, device):
    """The run's artifacts and figures as properties of the test (junit XML)."""
    record_property("probe_exit", run.code)
    record_property("qemu_late_lines", len(device.late_lines()))
    record_property("probe_wall_s", round(run.wall, 1))
    record_property("probe_json", str(run.json_path))
    record_property("probe_page", str(run.page_path))
    doc = run.document()
    for figure in (doc or {}).get("figures", []):
        record_property(f"figure {figure['id']}", f"{figure['value']:.6g} {figure['unit']}")


def present_services(doc):
    """The services probe found answering."""
    return {s["name"] for s in doc.get("services", []) if s.get("state") == "present"}


def worse_figures(doc):
    """`id change (old -> new unit)` of each figure probe's comparison marked worse; a figure
    the device no longer gives (schema 3: a 404, a failed download) with probe's reason."""
    worse = []
    for f in (doc.get("baseline") or {}).get("figures", []):
        if not f.get("worse"):
            continue
        if f.get("missing"):
            worse.append(f"{f['id']} {f['missing']}")
        else:
            worse.append(f"{f['id']} {f['change_pct']:+.1f} % ({f['old']:.4g} -> {f['new']:.4g} {f['unit']})")
    return worse


@pytest.fixture(scope="module")
def device(strategy, linklab_options, record_testsuite_property):
    """The board, booted to "network up"; powered off after the module."""
    out = linklab_options["results"] / strategy.board
    out.mkdir(parents=True, exist_ok=True)
    late_log = out / "qemu-late.txt"
    late_log.unlink(missing_ok=True)
    # Read by qemu/late-aside, the QEMU the environments name.
    os.environ["LINKLAB_QEMU_LATE_LOG"] = str(late_log)
    strategy.transition("network_up")
    print(f"{strategy.board}: {strategy.boot_line!r}; answered ping {strategy.boot_seconds:.1f} s after power on")
    record_testsuite_property("board", strategy.board)
    record_testsuite_property("boot_s", round(strategy.boot_seconds, 1))
    yield Device(strategy.board, strategy.address, late_log, strategy.recover_if_hung)
    strategy.transition("off")


def test_baseline(device, linklab_options, record_property):
    """Records this board's baseline when there is none: a probe run that must succeed."""
    opts = linklab_options
    baseline = opts["baselines"] / f"{device.board}.json"
    if baseline.is_file():
        pytest.skip(f"baseline kept: {baseline}")
    run = run_probe(opts, device.address, opts["results"] / device.board / "baseline")
    attach(record_property, run, device)
    fail_if_hung(device, run)
    if run.code != PROBE_OK:
        pytest.fail(
            f"linklab probe failed (exit {run.code}), no baseline recorded: {run.said()}"
            f"{device.fell_behind()}"
        )
    baseline.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run.json_path, baseline)
    print(f"baseline recorded: {baseline}")


def test_probe_against_baseline(device, linklab_options, record_property):
    """Probes the board against its baseline: probe's exit code is the verdict."""
    opts = linklab_options
    baseline = opts["baselines"] / f"{device.board}.json"
    if not baseline.is_file():
        pytest.fail(f"no baseline at {baseline} (test_baseline records one)")
    run = run_probe(opts, device.address, opts["results"] / device.board, baseline)
    attach(record_property, run, device)
    fail_if_hung(device, run)
    doc = run.document()
    if run.code == PROBE_WORSE_THAN_BASELINE:
        worse = worse_figures(doc) if doc else []
        pytest.fail(
            f"linklab probe exit 3, {device.board} is worse than its baseline {baseline}: "
            f"{', '.join(worse) or '(no JSON)'}; probe said: {run.said()}; page: {run.page_path}"
            f"{device.fell_behind()}"
        )
    if run.code != PROBE_OK:
        pytest.fail(
            f"linklab probe failed (exit {run.code}): {run.said()}{device.fell_behind()}"
        )
    compared = (doc.get("baseline") or {}).get("figures", [])
    assert compared, f"probe exited 0 but compared no figure with {baseline}"
    assert not worse_figures(doc), "probe exited 0 yet marked figures worse"
    # probe does not count a figure measured in one run only as worse, so a service that
    # stopped answering would pass its comparison: a firmware that lost a service fails here.
    lost = present_services(json.loads(baseline.read_text())) - present_services(doc)
    assert not lost, f"services answering in the baseline are gone: {', '.join(sorted(lost))}"
