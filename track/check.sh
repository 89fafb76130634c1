#!/bin/sh
# linklab's own figures against the baseline kept in the repository (docs/track.md): the
# committed suite run once and compared with track/baseline.json, exit 3 when a figure is
# worse (sizes exact; instructions per byte beyond each run's spread and the default 5 %; the
# baseline's five boots per image carry the minimal image's spread, up to 5.8 %); then exit 1
# when the firmware README's table is not the baseline's.
# Usage: track/check.sh [LINKLAB]   (default: target/debug/linklab; needs root, QEMU, iperf, iperf3, gcc)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
linklab=${1:-$root/target/debug/linklab}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$linklab" track import "$root/track/baseline.json" --db "$dir/track.sqlite" >/dev/null
"$linklab" track run "$root/track/linklab.toml" --label head --db "$dir/track.sqlite" >/dev/null
"$linklab" track compare baseline head --db "$dir/track.sqlite"
# The firmware README's table is the baseline's (linklab track table, docs/track.md).
"$linklab" track table baseline --file "$root/firmware/README.md" --reference lwip --check --db "$dir/track.sqlite"
