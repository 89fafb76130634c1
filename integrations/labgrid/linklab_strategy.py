"""labgrid strategy that boots a linklab firmware image to "network up".

"Network up" is what `linklab probe` needs of a board: the firmware printed its boot line on
the console (`linklab firmware: BOARD up, ADDR/PREFIX, ...`, firmware/common's `run`) and the
address it names answers ping from this host. The strategy binds any power and console
driver, so the same file drives labgrid's QEMUDriver (power and console in one) and a real
board behind a PDU and a serial port.
"""

import enum
import subprocess
import time

import attr
import pexpect

from labgrid.factory import target_factory
from labgrid.step import step
from labgrid.strategy import Strategy, StrategyError, never_retry

# The firmware's boot line; its address is the one the device configured (from linklab's
# configuration blob, or 198.18.0.2/24 when there is none); the embassy image says "up (embassy),".
BOOT_LINE = rb"linklab firmware: (\S+) up(?: \([^)]*\))?, (\d+\.\d+\.\d+\.\d+)/(\d+)"


class Status(enum.Enum):
    """The states the strategy can put a board in."""

    unknown = 0
    off = 1
    network_up = 2


@target_factory.reg_driver
@attr.s(eq=False)
class LinklabStrategy(Strategy):
    """Powers a board on, waits for linklab's boot line, then for the device to answer ping.

    board: the name the firmware must report (`mps2-an385`, `riscv32-virt`, ...): a wrong
    image is an error, not a probe of the wrong thing. hang_timeout: how long a board at
    "network up" may not answer ping after a test's run before it counts as hung.
    """

    bindings = {
        "power": "PowerProtocol",
        "console": "ConsoleProtocol",
    }

    board = attr.ib(validator=attr.validators.instance_of(str))
    boot_timeout = attr.ib(default=60.0, converter=float)
    ping_timeout = attr.ib(default=30.0, converter=float)
    hang_timeout = attr.ib(default=5.0, converter=float)
    status = attr.ib(default=Status.unknown)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.address = None
        self.boot_line = None
        self.boot_seconds = None

    @never_retry
    @step(args=["status"])
    def transition(self, status, *, step):  # pylint: disable=redefined-outer-name
        """Puts the board in `status` (`off` or `network_up`)."""
        if not isinstance(status, Status):
            status = Status[status]
        if status == Status.unknown:
            raise StrategyError(f"can not transition to {status}")
        if status == self.status:
            step.skip("nothing to do")
            return
        if status == Status.off:
            self.target.activate(self.power)
            self.power.off()
            self.address = None
        elif status == Status.network_up:
            self.transition(Status.off)
            self.target.activate(self.console)
            began = time.monotonic()
            self.power.on()
            try:
                self._await_boot_line()
                self._await_ping()
            except BaseException:
                # A board that did not come up (or a job interrupted meanwhile) is not left
                # powered: a farm's next job, or the rack's power budget, would find it on.
                self.power.off()
                self.status = Status.off
                raise
            self.boot_seconds = time.monotonic() - began
        else:
            raise StrategyError(f"no transition found from {self.status} to {status}")
        self.status = status

    def _await_boot_line(self):
        try:
            _, _, match, _ = self.console.expect(BOOT_LINE, timeout=self.boot_timeout)
        except pexpect.TIMEOUT as timeout:
            raise StrategyError(
                f"{self.board} never printed its boot line within {self.boot_timeout:.0f} s "
                f"(powered off); the console's last lines: {self._console_tail(timeout)!r}"
            ) from None
        self.boot_line = match.group(0).decode()
        said = match.group(1).decode()
        if said != self.board:
            raise StrategyError(f"expected board {self.board}, the firmware says {said}")
        self.address = match.group(2).decode()

    def _console_tail(self, timeout, lines=3, width=160):
        """The console's last lines before a timeout (labgrid's expect buffer)."""
        expect = getattr(self.console, "_expect", None)
        seen = (getattr(expect, "before", None) or getattr(expect, "buffer", None) or b"")
        if isinstance(seen, bytes):
            seen = seen.decode(errors="replace")
        tail = [line[:width] for line in seen.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) if tail else f"(nothing read; {str(timeout).splitlines()[0]})"

    def _answers_ping(self, within):
        """Whether the board's address answers a ping within `within` seconds."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            ping = subprocess.run(
                ["ping", "-c", "1", "-W", "1", self.address],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            if ping.returncode == 0:
                return True
        return False

    def recover_if_hung(self):
        """After a test's run on a board at "network up": None when the board still answers
        ping (within `hang_timeout` s), else the board hung. A hung board is power-cycled once
        (off, then on) through its power driver, so that the next user finds it running
        again, and the words for the test's failure are returned. The cycle is no retry: the
        test fails all the same; the module's teardown then powers the board off."""
        if self.status != Status.network_up or self._answers_ping(self.hang_timeout):
            return None
        self.target.activate(self.power)
        self.power.cycle()
        # Booting again after the cycle, not at "network up": the teardown powers it off.
        self.status = Status.unknown
        return (
            f"{self.board} hung: {self.address} stopped answering (no ping reply within "
            f"{self.hang_timeout:.0f} s, its power on); power-cycled once to recover it, the "
            "run not repeated"
        )

    def _await_ping(self):
        if not self._answers_ping(self.ping_timeout):
            raise StrategyError(
            f"{self.board} printed its boot line but {self.address} did not answer ping "
            f"within {self.ping_timeout:.0f} s"
        )

