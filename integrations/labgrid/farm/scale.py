"""What labgrid's coordinator carries at N places: run by farm/scale inside a namespace of its own.

For each N: a fresh `labgrid-coordinator` on 127.0.0.1 (its own scratch directory); one
`labgrid-exporter` exporting N boards' resources that point nowhere (a `NetworkPowerPort` of
model simplerest and a `NetworkSerialPort` per board, at 192.0.2.1, TEST-NET-1: the exporter
and coordinator never contact them), N places created over the coordinator's gRPC API (the
calls `labgrid-client create`, `add-match` and `set-tags` make, in one process: one client
process per call would measure Python's start-up N times), each tagged board=bI. Then, with
the `labgrid-client` a job uses: `places`, acquire + release of one place, and `reserve
--wait` by tags until the reservation is allocated (each the median of a few runs), and the
coordinator's and exporter's resident memory. One line of figures per N on stdout.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import grpc
from labgrid.remote.generated import labgrid_coordinator_pb2 as pb
from labgrid.remote.generated import labgrid_coordinator_pb2_grpc as pb_grpc

ADDRESS = "127.0.0.1:20408"
BIN = os.path.dirname(sys.executable)
REPEATS = 5


def client(*args):
    """Runs `labgrid-client ARGS` against the coordinator; its stdout."""
    env = dict(os.environ, LG_COORDINATOR=ADDRESS, LG_USERNAME="scale", LG_HOSTNAME="runner")
    done = subprocess.run([f"{BIN}/labgrid-client", *args], env=env, capture_output=True,
                          text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"labgrid-client {' '.join(args)}: {done.stderr.strip()[-400:]}")
    return done.stdout


def timed(action):
    """Seconds `action()` took."""
    began = time.monotonic()
    action()
    return time.monotonic() - began


def cpu_s(pid):
    """CPU seconds process `pid` has used (user + system, /proc's stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median_of(action, pid=None):
    """The median of REPEATS timings of `action()` in seconds; with `pid`, also the CPU
    seconds process `pid` (the coordinator) used per run, on average."""
    before = cpu_s(pid) if pid else 0.0
    wall = statistics.median(timed(action) for _ in range(REPEATS))
    if pid is None:
        return wall
    return wall, (cpu_s(pid) - before) / REPEATS


def get_places_ms(stub):
    """The median of 20 GetPlaces calls over one channel, in ms (no client start-up)."""
    return statistics.median(
        timed(lambda: stub.GetPlaces(pb.GetPlacesRequest())) for _ in range(20)) * 1000


def rss_mib(pid):
    """Resident memory of process `pid` in MiB (/proc's VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def exporter_config(n):
    """N boards' resources, each group a board as farm/host1.yaml has them, pointing nowhere."""
    lines = []
    for i in range(n):
        lines += [
            f"b{i:04d}:",
            "  NetworkPowerPort:",
            "    model: simplerest",
            "    host: 'http://192.0.2.1:8000/power/{index}/{value}'",
            f"    index: {i}",
            "  NetworkSerialPort:",
            "    host: 192.0.2.1",
            f"    port: {3000 + i}",
            "    speed: 115200",
            "    protocol: raw",
        ]
    return "\n".join(lines) + "\n"


def await_port(limit=60):
    """Waits until the coordinator accepts a gRPC channel."""
    channel = grpc.insecure_channel(ADDRESS)
    grpc.channel_ready_future(channel).result(timeout=limit)
    return channel


def resources_listed():
    """How many power ports the coordinator lists (one per registered board)."""
    return client("resources").count("/NetworkPowerPort")


def create_places(stub, n):
    """N places, each matching its board's group and tagged board=bI, image=main."""
    for i in range(n):
        name = f"p{i:04d}"
        stub.AddPlace(pb.AddPlaceRequest(name=name))
        stub.AddPlaceMatch(pb.AddPlaceMatchRequest(placename=name, pattern=f"scale/b{i:04d}/*"))
        stub.SetPlaceTags(pb.SetPlaceTagsRequest(placename=name, tags={"board": f"b{i:04d}", "image": "main"}))


def reserve_and_cancel(tag):
    """`reserve --wait board=TAG` until allocated, then the reservation cancelled."""
    out = client("reserve", "--wait", f"board={tag}")
    token = next(line.split("'")[1] for line in out.splitlines() if line.startswith("Reservation '"))
    client("cancel-reservation", token)


def job_calls(tag):
    """The labgrid-client calls farm/job makes around its test: reserve --wait by tags, show
    the allocated place, acquire, show twice (board, image tags), release, cancel."""
    out = client("reserve", "--wait", f"board={tag}")
    token = next(line.split("'")[1] for line in out.splitlines() if line.startswith("Reservation '"))
    place = next(line.split("'")[1] for line in client("-p", f"+{token}", "show").splitlines()
                 if line.startswith("Place '"))
    client("-p", place, "acquire")
    client("-p", place, "show")
    client("-p", place, "show")
    client("-p", place, "release")
    client("cancel-reservation", token)


def measure(n, scratch):
    """Brings up a coordinator and exporter for N boards and measures; a dict of figures."""
    work = os.path.join(scratch, f"n{n}")
    os.makedirs(work)
    with open(os.path.join(work, "exporter.yaml"), "w") as f:
        f.write(exporter_config(n))
    logs = open(os.path.join(work, "log.txt"), "w")
    coordinator = subprocess.Popen([f"{BIN}/labgrid-coordinator", "--listen", ADDRESS],
                                   cwd=work, stdout=logs, stderr=logs)
    exporter = None
    try:
        stub = pb_grpc.CoordinatorStub(await_port())
        figures = {"n": n, "coordinator_idle_mib": rss_mib(coordinator.pid)}
        began = time.monotonic()
        exporter = subprocess.Popen([f"{BIN}/labgrid-exporter", "--coordinator", ADDRESS,
                                     "--name", "scale", "--hostname", "127.0.0.1",
                                     os.path.join(work, "exporter.yaml")], stdout=logs, stderr=logs)
        while resources_listed() < n:
            if exporter.poll() is not None:
                raise RuntimeError(f"the exporter exited {exporter.returncode} ({work}/log.txt)")
            time.sleep(0.5)
        figures["resources_s"] = time.monotonic() - began
        pid = coordinator.pid
        before = cpu_s(pid)
        figures["places_s"] = timed(lambda: create_places(stub, n))
        figures["places_cpu_s"] = cpu_s(pid) - before
        last = f"p{n - 1:04d}"
        figures["get_places_ms"] = get_places_ms(stub)
        figures["list_s"], figures["list_cpu_s"] = median_of(lambda: client("places"), pid)
        figures["resources_list_s"], figures["resources_cpu_s"] = median_of(
            lambda: client("resources"), pid)
        figures["acquire_release_s"], figures["acquire_release_cpu_s"] = median_of(
            lambda: (client("-p", last, "acquire"), client("-p", last, "release")), pid)
        figures["reserve_s"], figures["reserve_cpu_s"] = median_of(
            lambda: reserve_and_cancel(f"b{n - 1:04d}"), pid)
        figures["show_s"], figures["show_cpu_s"] = median_of(lambda: client("-p", last, "show"), pid)
        figures["job_s"], figures["job_cpu_s"] = median_of(lambda: job_calls(f"b{n - 1:04d}"), pid)
        figures["client_start_s"] = median_of(lambda: client("--help"))
        figures["coordinator_mib"] = rss_mib(coordinator.pid)
        figures["exporter_mib"] = rss_mib(exporter.pid)
        return figures
    finally:
        for proc in (exporter, coordinator):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [10, 100, 1000]
    scratch = tempfile.mkdtemp(prefix="lgscale.")
    print("N: places; wall: seconds as a job sees them (labgrid-client, its start-up included); "
          "cpu: the coordinator's CPU ms per call", flush=True)
    try:
        for n in sizes:
            f = measure(n, scratch)
            print(
                f"N={f['n']}: exporter registered in {f['resources_s']:.1f} s; places created "
                f"in {f['places_s']:.2f} s ({f['places_s'] / n * 1000:.1f} ms/place, "
                f"cpu {f['places_cpu_s'] / n * 1000:.1f} ms/place); GetPlaces "
                f"{f['get_places_ms']:.1f} ms; `places` {f['list_s']:.2f} s (cpu "
                f"{f['list_cpu_s'] * 1000:.0f} ms); `resources` {f['resources_list_s']:.2f} s "
                f"(cpu {f['resources_cpu_s'] * 1000:.0f} ms); acquire+release "
                f"{f['acquire_release_s']:.2f} s (cpu {f['acquire_release_cpu_s'] * 1000:.0f} ms); "
                f"reserve->allocated+cancel {f['reserve_s']:.2f} s (cpu "
                f"{f['reserve_cpu_s'] * 1000:.0f} ms); `show` {f['show_s']:.2f} s (cpu "
                f"{f['show_cpu_s'] * 1000:.0f} ms); a job's 7 calls {f['job_s']:.2f} s (cpu "
                f"{f['job_cpu_s'] * 1000:.0f} ms); client start {f['client_start_s']:.2f} s; "
                f"coordinator RSS {f['coordinator_mib']:.1f} MiB (idle "
                f"{f['coordinator_idle_mib']:.1f}); exporter RSS {f['exporter_mib']:.1f} MiB",
                flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
