"""Checks that a pytest run of test_probe.py failed because probe caught a regression.

Usage: expect_caught.py JUNIT_XML PROBE_JSON FIGURE...

Passes only when test_probe_against_baseline is the one failed test, its failure says probe
exited 3 and names every FIGURE, and probe's own JSON marks every FIGURE worse. Anything else
(a pass, a boot failure, a probe error, another figure's regression alone) is an error: the
shaped link was not caught as a shaped link.
"""

import json
import sys
import xml.etree.ElementTree as ET

TEST = "test_probe_against_baseline"


def main(junit_xml, probe_json, figures):
    """Returns the problems found (empty when the regression was caught as expected)."""
    problems = []
    cases = ET.parse(junit_xml).getroot().iter("testcase")
    failed = {}
    for case in cases:
        for bad in list(case.iter("failure")) + list(case.iter("error")):
            # pytest shortens the message attribute; the element's text has it whole.
            failed[case.get("name")] = f"{bad.get('message') or ''}\n{bad.text or ''}"
    if list(failed) != [TEST]:
        problems.append(f"expected exactly {TEST} to fail, failed: {sorted(failed) or 'none'}")
    message = failed.get(TEST, "")
    if "linklab probe exit 3" not in message:
        problems.append(f"the failure is not probe's exit 3: {message[:500]!r}")
    for figure in figures:
        if f"{figure} " not in message:
            problems.append(f"the failure does not name {figure}: {message[:500]!r}")
    try:
        with open(probe_json, encoding="utf-8") as f:
            compared = (json.load(f).get("baseline") or {}).get("figures", [])
    except (OSError, ValueError) as e:
        return problems + [f"probe's JSON {probe_json}: {e}"]
    worse = {c["id"] for c in compared if c.get("worse")}
    for figure in figures:
        if figure not in worse:
            problems.append(f"probe's JSON does not mark {figure} worse (worse: {sorted(worse)})")
    if not problems:
        print(f"caught: {message.splitlines()[0][:600]}")
    return problems


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: expect_caught.py JUNIT_XML PROBE_JSON FIGURE...")
    found = main(sys.argv[1], sys.argv[2], sys.argv[3:])
    for p in found:
        print(f"expect_caught: {p}", file=sys.stderr)
    sys.exit(1 if found else 0)
