"""Picks the shaped check's cap: a tbf rate on the way to the device that probe must catch.

Usage: shaped_rate.py BASELINE_JSON TOLERANCE_PCT

Prints `RATE_BIT_S FIGURE LOW HIGH`: the rate, the TCP-to-the-device figure it is chosen to
catch, and that figure's range in the baseline (bit/s).

probe counts a throughput worse only when this run's range lies below the baseline's by a gap
larger than the tolerance (of the baseline's figure) and larger than either range's width. So
how far a cap must go depends on how much the baseline varied: half of a baseline seen at
51–96 Mbit/s (a busy host) is 48 Mbit/s, above the 5.6 Mbit/s the rule needs to call it worse.
Both TCP figures to the device pass the tbf; of the two, the one the rule catches at the
highest cap is the target, and the cap is 0.6 of that ceiling (room for a slice that runs a
little over the tbf's rate, as two streams do by up to 12 %). Exits 1 when neither baseline
range leaves room for a cap of at least 1 Mbit/s.
"""

import json
import sys

FIGURES = ("tcp.to_device", "tcp.to_device.p2")
MARGIN = 0.6
FLOOR_BIT_S = 1e6


def ceiling(figure, tolerance_pct):
    """The highest a run's range may reach and still be caught as worse than `figure`."""
    value = figure["value"]
    low = figure.get("low")
    high = figure.get("high")
    low = value if low is None else low
    high = value if high is None else high
    return low - max(value * tolerance_pct / 100.0, high - low), low, high


def pick(document, tolerance_pct):
    """(rate, figure id, low, high) for the figure caught at the highest cap, or an error."""
    figures = {f["id"]: f for f in document.get("figures", [])}
    found = [(ceiling(figures[i], tolerance_pct), i) for i in FIGURES if i in figures]
    if not found:
        return f"no {' or '.join(FIGURES)} in the baseline"
    (top, low, high), name = max(found)
    rate = top * MARGIN
    if rate < FLOOR_BIT_S:
        ranges = ", ".join(f"{i} {lo / 1e6:.1f}–{hi / 1e6:.1f} Mbit/s" for (_, lo, hi), i in found)
        return f"the baseline varied too much for a cap to be caught ({ranges})"
    return int(rate), name, low, high


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: shaped_rate.py BASELINE_JSON TOLERANCE_PCT")
    try:
        with open(argv[1], encoding="utf-8") as f:
            document = json.load(f)
        tolerance_pct = float(argv[2])
    except (OSError, ValueError) as e:
        sys.exit(f"shaped_rate: {e}")
    picked = pick(document, tolerance_pct)
    if isinstance(picked, str):
        sys.exit(f"shaped_rate: {picked}")
    rate, name, low, high = picked
    print(rate, name, int(low), int(high))


if __name__ == "__main__":
    main(sys.argv)
