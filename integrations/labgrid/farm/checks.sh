# Sourced by farm/run-farm: what the farm run checks, each adding its name to FAILED when it
# did not hold.

FAILED=()

# Waits up to $1 s until every place's resources are there (both exporters registered).
farm_await_places() {
    local limit=$1 i want
    want=$(grep -cv '^#' "$FARM_DIR/boards.txt")
    for ((i = 0; i < limit; i++)); do
        [ "$(lgc resources 2>/dev/null | grep -c '/NetworkPowerPort')" -ge "$want" ] && return 0
        sleep 1
    done
    say "the exporters did not register $want boards' resources within $limit s"
    return 1
}

# Processes of the farm still running anywhere, and its namespaces still there (empty: none).
farm_leftovers() {
    local what
    what=$(pgrep -f "labgrid-(coordinator|exporter)|power_server.py|ser2net -n -d -c $FARM_RUN|linklab emu boot .*--tap lfb" || true)
    [ -z "$what" ] || echo "processes $(echo $what)"
    ip netns list | grep -q "^$FARM_NS_PREFIX-" && echo "namespaces $(ip netns list | grep "^$FARM_NS_PREFIX-" | awk '{print $1}' | tr '\n' ' ')"
    return 0
}

farm_checks() {
    :
}
