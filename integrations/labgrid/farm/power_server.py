#!/usr/bin/env python3
"""A board host's network power switch: labgrid's `simplerest` power backend speaks to it.

`GET /power/N/1` powers board N on, `GET /power/N/0` off, `GET /power/N` answers "1" or "0"
(labgrid's driver/power/simplerest.py). Powering on starts the board: `linklab emu boot` (QEMU
with the board's NIC on a TAP, its address and MAC in linklab's configuration blob); the TAP
is put on the host's bridge, the farm's network. Powering off stops it. In a rack, a PDU with
the same REST interface switches a real board's supply instead.

Each board's console is a pseudo-terminal that exists whether the board is on or off, as a
USB-serial adapter does: the board's console output is written to it, and ser2net serves its
other end on the network (labgrid's `NetworkSerialPort`). Nothing is kept when no one reads.

The farm's fault hook (no PDU has it; faults.sh calls it from the host): `GET /hang/N` freezes
board N as a hung board is frozen: its processes (QEMU) get SIGSTOP, so it answers nothing on
the network or the console while its power stays on (`GET /power/N` still answers "1").
Powering it off ends it as a power cut ends a hung board.

Usage: power_server.py SPEC.json, where SPEC is {"listen": [addr, port], "bridge": "br0",
"linklab": BIN, "boards": [{"index", "board", "image", "elf", "ip", "mac", "tap", "tty"}]}.
"""

import http.server
import json
import os
import signal
import subprocess
import sys
import termios
import threading
import time
import tty


class Board:
    """One board: its console pseudo-terminal and, while powered, its `linklab emu boot`."""

    def __init__(self, spec, linklab, bridge):
        self.spec = spec
        self.linklab = linklab
        self.bridge = bridge
        self.proc = None
        self.hung = []
        self.lock = threading.Lock()
        # The console: we write into the master; ser2net opens the slave through the link.
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        if os.path.lexists(spec["tty"]):
            os.unlink(spec["tty"])
        os.symlink(os.ttyname(self.slave), spec["tty"])
        threading.Thread(target=self._discard_input, daemon=True).start()

    def _discard_input(self):
        """What a console user types goes nowhere (the firmware reads no console input)."""
        while True:
            try:
                os.read(self.master, 4096)
            except BlockingIOError:
                time.sleep(0.2)
            except OSError:
                time.sleep(0.2)

    def _to_console(self, data):
        """Writes board output to the console; drops it when no one reads (a full buffer)."""
        try:
            os.write(self.master, data)
        except (BlockingIOError, OSError):
            pass

    def _pump(self, proc):
        """Copies the board's console (linklab emu's stdout) to the pseudo-terminal."""
        for line in proc.stdout:
            self._to_console(line.replace(b"\n", b"\r\n"))

    def _attach_tap(self, proc):
        """Puts the board's TAP (QEMU makes it) on the host's bridge once it exists."""
        tap = self.spec["tap"]
        while proc.poll() is None and not os.path.exists(f"/sys/class/net/{tap}"):
            time.sleep(0.1)
        if proc.poll() is None:
            subprocess.run(["ip", "link", "set", tap, "master", self.bridge, "up"], check=False)

    def is_on(self):
        """Power is on while the board's process runs."""
        return self.proc is not None and self.proc.poll() is None

    def power(self, on):
        """Switches the board on (starts it) or off (stops it and waits for it)."""
        with self.lock:
            if on and not self.is_on():
                termios.tcflush(self.slave, termios.TCIOFLUSH)
                s = self.spec
                argv = [self.linklab, "emu", "boot", s["board"], "--image", s["image"],
                        "--elf", s["elf"], "--tap", s["tap"], "--ip", s["ip"],
                        "--mac", s["mac"], "--boot-timeout", "600"]
                # stdout is the board's console; linklab emu's own errors go to the host's log.
                self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, start_new_session=True)
                threading.Thread(target=self._pump, args=(self.proc,), daemon=True).start()
                threading.Thread(target=self._attach_tap, args=(self.proc,), daemon=True).start()
            elif not on and self.proc is not None:
                stop(self.proc, self.hung)
                self.proc = None
                self.hung = []

    def hang(self):
        """Freezes the powered board's processes (SIGSTOP); their pids, or [] when it is off."""
        with self.lock:
            if not self.is_on():
                return []
            self.hung = descendants(self.proc.pid)
            for pid in self.hung:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    pass
            return self.hung


def descendants(pid):
    """The processes below `pid` (linklab emu's QEMU and what it started), children first."""
    found = []
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        return found
    for child in children:
        found.append(child)
        found += descendants(child)
    return found


def stop(proc, hung):
    """SIGTERM to the board's process group (linklab emu stops its QEMU), then SIGKILL; a hung
    board's frozen processes are let run again so that they take linklab emu's SIGTERM."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        for pid in hung:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def handler_for(boards):
    """The HTTP handler: simplerest's URLs, one board per index."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            parts = self.path.strip("/").split("/")
            if len(parts) == 2 and parts[0] == "hang" and parts[1] in boards:
                self.hang(boards[parts[1]], parts[1])
                return
            if len(parts) not in (2, 3) or parts[0] != "power" or parts[1] not in boards:
                self.send_error(404, "expected /power/INDEX[/0|1]")
                return
            board = boards[parts[1]]
            if len(parts) == 3:
                if parts[2] not in ("0", "1"):
                    self.send_error(400, "value must be 0 or 1")
                    return
                board.power(parts[2] == "1")
                print(f"power: board {parts[1]} ({board.spec['board']}) "
                      f"{'on' if parts[2] == '1' else 'off'}", flush=True)
            body = b"1" if board.is_on() else b"0"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def hang(self, board, index):
            """The fault hook: freezes a powered board; 409 when it is off."""
            pids = board.hang()
            if not pids:
                self.send_error(409, "the board is off")
                return
            print(f"hang: board {index} ({board.spec['board']}) frozen (SIGSTOP to pids "
                  f"{' '.join(map(str, pids))}), its power left on", flush=True)
            body = b"hung"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def main():
    spec = json.load(open(sys.argv[1]))
    boards = {str(b["index"]): Board(b, spec["linklab"], spec["bridge"]) for b in spec["boards"]}
    server = http.server.ThreadingHTTPServer(tuple(spec["listen"]), handler_for(boards))

    def shutdown(*_):
        for board in boards.values():
            board.power(False)
        os._exit(0)

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    print(f"power server on {spec['listen'][0]}:{spec['listen'][1]}: "
          f"{', '.join(b.spec['board'] + '/' + b.spec['image'] for b in boards.values())}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
