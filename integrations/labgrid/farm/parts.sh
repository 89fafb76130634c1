# Sourced by farm/run-farm: starts the farm's parts in their namespaces (net.sh made them).
# Needs FARM_DIR (this folder), FARM_RUN (a scratch directory), FARM_VENV, FARM_LINKLAB,
# FARM_FIRMWARE (firmware/target) and FARM_LOGS; each part's output goes to FARM_LOGS/PART.log.

COORDINATOR=198.19.64.10:20408

# Waits up to $2 s for TCP $1 (HOST:PORT) to accept from the runner's namespace.
await_port() {
    local hostport=$1 limit=$2 i
    for ((i = 0; i < limit * 5; i++)); do
        in_ns runner bash -c "exec 3<>/dev/tcp/${hostport%:*}/${hostport#*:}" 2>/dev/null && return 0
        sleep 0.2
    done
    return 1
}

farm_coordinator_up() {
    # The coordinator keeps places.yaml in its working directory: the run's scratch one.
    (cd "$FARM_RUN" && exec ip netns exec "$FARM_NS_PREFIX-coord" "$FARM_VENV/bin/labgrid-coordinator" --listen "$COORDINATOR") \
        >>"$FARM_LOGS/coordinator.log" 2>&1 &
    echo $! >"$FARM_RUN/coordinator.pid"
    await_port "$COORDINATOR" 60 || { echo "the coordinator did not listen on $COORDINATOR" >&2; return 1; }
}

# Host $1's boards, from boards.txt, as the power server's JSON spec (stdout).
power_spec() {
    local host=$1 addr=$2
    awk -v host="$host" -v addr="$addr" -v run="$FARM_RUN" -v fw="$FARM_FIRMWARE" \
        -v linklab="$FARM_LINKLAB" '
        /^#/ || NF < 8 || $4 != host { next }
        { b = b sep sprintf("{\"index\": %d, \"board\": \"%s\", \"image\": \"%s\", \"elf\": \"%s/%s\", \"ip\": \"%s/24\", \"mac\": \"02:4c:4c:00:40:%02x\", \"tap\": \"lfb%d\", \"tty\": \"%s/%s-%d.tty\", \"place\": \"%s\", \"port\": %d}",
              $5, $2, ($3 == "phy10-bench" ? "main" : $3), fw, $8, $6, NR, $5, run, host, $5, $1, $7); sep = ", " }
        END { printf "{\"listen\": [\"%s\", 8000], \"bridge\": \"br0\", \"linklab\": \"%s\", \"boards\": [%s]}\n", addr, linklab, b }
    ' "$FARM_DIR/boards.txt"
}

# Host $1's ser2net configuration: each board's console pseudo-terminal on its TCP port.
ser2net_config() {
    local host=$1 addr=$2
    awk -v host="$host" -v addr="$addr" -v run="$FARM_RUN" '
        /^#/ || NF < 8 || $4 != host { next }
        { printf "connection: &%s\n  accepter: tcp,%s,%d\n  connector: serialdev,%s/%s-%d.tty,115200n81,local\n  options:\n    kickolduser: true\n", $1, addr, $7, run, host, $5 }
    ' "$FARM_DIR/boards.txt"
}

# Board host $1 at address $2: its power server, ser2net, then its exporter.
farm_host_up() {
    local host=$1 addr=$2 i
    power_spec "$host" "$addr" >"$FARM_RUN/$host-power.json"
    ser2net_config "$host" "$addr" >"$FARM_RUN/$host-ser2net.yaml"
    in_ns "$host" python3 "$FARM_DIR/power_server.py" "$FARM_RUN/$host-power.json" \
        >>"$FARM_LOGS/$host-power.log" 2>&1 &
    await_port "$addr:8000" 30 || { echo "$host: the power server did not listen" >&2; return 1; }
    in_ns "$host" ser2net -n -d -c "$FARM_RUN/$host-ser2net.yaml" -P "$FARM_RUN/$host-ser2net.pid" \
        >>"$FARM_LOGS/$host-ser2net.log" 2>&1 &
    await_port "$addr:3000" 30 || { echo "$host: ser2net did not listen" >&2; return 1; }
    farm_exporter_up "$host" "$addr"
}

# Host $1's labgrid-exporter (also after the exporter-killed fault), started again whenever it
# exits 100, as labgrid's systemd unit does (RestartForceExitStatus=100): labgrid-exporter
# exits 100 when it lost its coordinator. Its pid goes to FARM_RUN/HOST-exporter.pid.
farm_exporter_up() {
    local host=$1 addr=$2
    (
        while true; do
            # Not through in_ns: $! must be the exporter itself (ip netns exec execs it).
            ip netns exec "$FARM_NS_PREFIX-$host" "$FARM_VENV/bin/labgrid-exporter" \
                --coordinator "$COORDINATOR" --name "$host" --hostname "$addr" \
                "$FARM_DIR/$host.yaml" >>"$FARM_LOGS/$host-exporter.log" 2>&1 &
            echo $! >"$FARM_RUN/$host-exporter.pid"
            wait $! && exit 0
            [ $? = 100 ] || exit 0
            sleep 1
        done
    ) &
}

# labgrid-client against the coordinator, from the runner's namespace.
lgc() { in_ns runner env LG_COORDINATOR="$COORDINATOR" "$FARM_VENV/bin/labgrid-client" "$@"; }

# One place per board: its exporter's resources and its tags (board, image).
farm_places_up() {
    local place board image host rest
    while read -r place board image host rest; do
        case "$place" in '#'* | '') continue ;; esac
        lgc -p "$place" create
        lgc -p "$place" add-match "$host/$place/*"
        lgc -p "$place" set-tags board="$board" image="$image"
    done <"$FARM_DIR/boards.txt"
}

# The farm's one store: Debian's PostgreSQL server in a namespace of its own (198.19.64.13),
# which every job writes its figures into through `linklab track import --db` (store_job), as
# a farm's many runners would. Trust on the farm's network and no fsync: a throwaway store for
# this run (a real farm's server keeps both).
FARM_STORE_URL=postgres://postgres@198.19.64.13:5432/postgres
export FARM_STORE_URL
farm_store_up() {
    local bin data="$FARM_RUN/store/data"
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -n "$bin" ] && [ -x "$bin/initdb" ] || { echo "no PostgreSQL server: install Debian's postgresql (scripts/setup)" >&2; return 1; }
    # The server runs as the postgres user, who must reach its data under the run's folder.
    chmod o+x "$FARM_RUN"
    mkdir -p "$FARM_RUN/store"
    chown postgres: "$FARM_RUN/store"
    runuser -u postgres -- "$bin/initdb" -A trust -U postgres --no-sync -E UTF8 -D "$data" \
        >>"$FARM_LOGS/store.log" 2>&1 || { echo "initdb failed (logs/store.log)" >&2; return 1; }
    echo "host all all 198.19.64.0/24 trust" >>"$data/pg_hba.conf"
    in_ns store runuser -u postgres -- "$bin/postgres" -D "$data" -h 198.19.64.13 -k "" -c fsync=off \
        >>"$FARM_LOGS/store.log" 2>&1 &
    await_port 198.19.64.13:5432 60 || { echo "the store (PostgreSQL) did not listen (logs/store.log)" >&2; return 1; }
}
