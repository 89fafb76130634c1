# Sourced by farm/run-farm: the farm's network, one namespace per part, all on one switch.
#
# lgfarm-PID-sw holds the switch (bridge sw0); the coordinator (198.19.64.10), the board hosts
# (host1 .11, host2 .12) and the runners (.20) each have a namespace with eth0 plugged into it.
# A board host's eth0 sits on its own bridge br0 with the host's address, and the power server
# puts each board's TAP on br0 when it powers the board on: the boards (.101...) are on the
# farm's network as a rack's boards are on the lab switch, and the runners reach them only
# through it. Needs FARM_NS_PREFIX set; farm_down deletes every namespace made (and whatever
# still runs in one).

FARM_NS=()

# Makes namespace $1 (short name) with eth0 on the switch; address $2 (CIDR) on eth0, or on
# br0 (eth0 enslaved) when $3 is "bridged".
farm_ns_add() {
    local name=$1 cidr=$2 mode=${3:-} ns="$FARM_NS_PREFIX-$1" sw="$FARM_NS_PREFIX-sw"
    ip netns add "$ns"
    FARM_NS+=("$ns")
    ip -n "$ns" link set lo up
    ip -n "$sw" link add "v-$name" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "v-$name" master sw0 up
    if [ "$mode" = bridged ]; then
        ip -n "$ns" link add br0 type bridge
        ip -n "$ns" link set eth0 master br0 up
        ip -n "$ns" addr add "$cidr" dev br0
        ip -n "$ns" link set br0 up
    else
        ip -n "$ns" addr add "$cidr" dev eth0
        ip -n "$ns" link set eth0 up
    fi
}

# The switch and every part's namespace.
farm_net_up() {
    local sw="$FARM_NS_PREFIX-sw"
    ip netns add "$sw"
    FARM_NS+=("$sw")
    ip -n "$sw" link set lo up
    ip -n "$sw" link add sw0 type bridge
    ip -n "$sw" link set sw0 up
    farm_ns_add coord 198.19.64.10/24
    farm_ns_add host1 198.19.64.11/24 bridged
    farm_ns_add host2 198.19.64.12/24 bridged
    farm_ns_add store 198.19.64.13/24
    farm_ns_add runner 198.19.64.20/24
}

# Stops what runs in namespace $1 (TERM, then KILL after 3 s) and deletes it.
farm_ns_drop() {
    local ns=$1 pids i
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
        kill $pids 2>/dev/null || true
        for i in 1 2 3 4 5 6; do
            [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
            sleep 0.5
        done
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    fi
    ip netns del "$ns" 2>/dev/null || true
}

# Every namespace made, the parts before the switch.
farm_down() {
    local i
    for ((i = ${#FARM_NS[@]} - 1; i >= 0; i--)); do farm_ns_drop "${FARM_NS[$i]}"; done
    FARM_NS=()
}

# Runs "$@" in part $1's namespace.
in_ns() { local part=$1; shift; ip netns exec "$FARM_NS_PREFIX-$part" "$@"; }
