#!/bin/sh
# The pin-level figures of docs/rp2040js.md and docs/soft-phy-chips.md: stock transfers to and
# from the device, each rate in the emulated chip's clock (bytes over the harness's
# `emulated_ns` read before and after). Run inside `run`'s namespace:
#
#   N=1M emulators/rp2040js/run --oversample 8 -- emulators/rp2040js/transfers.sh in2 curl out2 in3 out3
#
# in2: iperf 2 -n N into the device, timed until the device closed the stream (its last
#      byte arrived; the client is done a window earlier) and until the client was done;
# out2: iperf 2 -R -n N from the device; curl: /1MB.txt from the device (length checked);
# in3 / out3: iperf3 -n N into / -R from the device (into: the bytes the device counted at
#      the client's end, and the client's retransmissions);
# stats: the device's PHY and MAC counters (also printed at the end).
set -eu
N=${N:-1M}
dev=198.18.0.2
now() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['emulated_ns'])" "$RP2040JS_STATUS"; }
rate() { python3 -c "import sys; n,a,b=int(sys.argv[2]),int(sys.argv[3]),int(sys.argv[4]); print('%s: %d B in %.3f emulated s = %.0f kB/s' % (sys.argv[1], n, (b-a)/1e9, n/((b-a)/1e9)/1e3))" "$@"; }
iperf2_open() { curl -sS --max-time 120 "http://$dev/stats" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['iperf2']['open_streams'] else 1)"; }
wait_closed() { while iperf2_open; do sleep 0.05; done; }
stats() {
    curl -sS --max-time 120 "http://$dev/stats" | python3 -c "
import json, sys
d = json.load(sys.stdin)
print('device phy', d['phy'])
print('device mac', {k: v for k, v in d['mac'].items() if v}, 'laws', d['conservation'], d['phy_conservation'])"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for what in "$@"; do
    case $what in
    in2)
        a=$(now); iperf -c $dev -n "$N" -y C > "$tmp/out"; b=$(now); wait_closed; c=$(now)
        n=$(tail -1 "$tmp/out" | cut -d, -f8)
        rate "iperf2 -n $N into the device, until it closed the stream" "$n" "$a" "$c"
        rate "iperf2 -n $N into the device, until the client was done" "$n" "$a" "$b" ;;
    out2)
        a=$(now); iperf -c $dev -n "$N" -R -y C > "$tmp/out"; b=$(now); wait_closed
        rate "iperf2 -R -n $N from the device" "$(tail -1 "$tmp/out" | cut -d, -f8)" "$a" "$b" ;;
    curl)
        a=$(now); n=$(curl -sS --max-time 600 "http://$dev/1MB.txt" | wc -c); b=$(now)
        rate "curl /1MB.txt from the device" "$n" "$a" "$b" ;;
    in3|out3)
        flag=; [ "$what" = out3 ] && flag=-R
        a=$(now); iperf3 -c $dev -n "$N" $flag -J > "$tmp/out"; b=$(now)
        n=$(python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['end']; print(e['sum_received']['bytes']); print('iperf3', sys.argv[2], 'sent', e['sum_sent']['bytes'], 'retransmits', e['sum_sent'].get('retransmits'), file=sys.stderr)" "$tmp/out" "$what")
        rate "iperf3 $flag -n $N, $( [ "$what" = in3 ] && echo into || echo from) the device (received)" "$n" "$a" "$b" ;;
    stats) stats ;;
    *) echo "transfers.sh: unknown transfer $what (in2 out2 curl in3 out3 stats)" >&2; exit 2 ;;
    esac
done
stats
