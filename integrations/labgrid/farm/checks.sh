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
    what=$(pgrep -f "labgrid-(coordinator|exporter)|power_server.py|ser2net -n -d -c $FARM_RUN|linklab emu boot .*--tap lfb|postgres -D $FARM_RUN" || true)
    [ -z "$what" ] || echo "processes $(echo $what)"
    ip netns list | grep -q "^$FARM_NS_PREFIX-" && echo "namespaces $(ip netns list | grep "^$FARM_NS_PREFIX-" | awk '{print $1}' | tr '\n' ' ')"
    return 0
}

# Runs farm/job $1 with tags $2... in the runners' namespace (its output on stdout).
run_job() {
    in_ns runner env LG_COORDINATOR="$COORDINATOR" FARM_VENV="$FARM_VENV" \
        FARM_LINKLAB="$FARM_LINKLAB" RESULTS="$RESULTS" PATH="$PATH" FARM_STORE_URL="$FARM_STORE_URL" \
        FARM_PROBE_DURATION="${FARM_PROBE_DURATION:-5}" "$FARM_DIR/job" "$@"
}

# The places acquired now, "PLACE:OWNER ..." (empty: none).
places_held() {
    lgc -v places 2>/dev/null | awk "/^Place '/ { p = \$2; gsub(/[':]/, \"\", p) }
        /^ *acquired: / && \$2 != \"None\" { printf \"%s:%s \", p, \$2 }" || true
}

# No place is left acquired (every job released its place).
check_places_free() {
    local held
    held=$(places_held)
    [ -z "$held" ] || { say "places left acquired: $held"; FAILED+=("places-left-acquired"); }
}

# Step 2: one job end to end.
check_one_job() {
    say "one job: board=riscv32-virt image=main"
    run_job one board=riscv32-virt image=main || FAILED+=("one-job")
    check_places_free
}

# Step 3: three jobs at once on different places, and a fourth for a place one of them holds:
# it waits in its reservation (it starts once that place is acquired, so it must wait) and
# runs when the place is released.
check_concurrent_jobs() {
    local pids=() names=(a-mps2-main b-riscv-main c-mps2-embassy) i
    say "three jobs at once (mps2-an385/main, riscv32-virt/main, mps2-an385/embassy), then one more for riscv32-virt/main"
    run_job a-mps2-main board=mps2-an385 image=main & pids+=($!)
    run_job b-riscv-main board=riscv32-virt image=main & pids+=($!)
    run_job c-mps2-embassy board=mps2-an385 image=embassy & pids+=($!)
    local until=$(($(date +%s) + 120))
    until [[ "$(places_held)" == *"lf-riscv-main:"* ]] || [ "$(date +%s)" -gt "$until" ]; do
        sleep 0.2
    done
    run_job d-waits board=riscv32-virt image=main >"$FARM_RUN/d-waits.out" & pids+=($!)
    names+=(d-waits)
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || FAILED+=("job-${names[$i]}")
    done
    cat "$FARM_RUN/d-waits.out"
    grep -q "^job d-waits: waited .* got lf-riscv-main" "$FARM_RUN/d-waits.out" \
        || { say "job d-waits did not wait for the busy lf-riscv-main"; FAILED+=("busy-place-wait"); }
    check_places_free
}

# Every job that passed is in the farm's store, read back from the runners' namespace: a run
# labelled with the job, its entry named BOARD/IMAGE, its figures with their samples.
check_store() {
    local runs job missing=()
    runs=$(in_ns runner "$FARM_LINKLAB" track runs --db "$FARM_STORE_URL") \
        || { say "the store could not be read"; FAILED+=("store"); return; }
    for job in "$RESULTS"/store/*.track.json; do
        job=$(basename "$job" .track.json)
        grep -qE "^ *[0-9]+  $job " <<<"$runs" || missing+=("$job")
    done
    [ ${#missing[@]} -eq 0 ] || { say "jobs missing from the store: ${missing[*]}"; FAILED+=("store"); return; }
    say "the store ($FARM_STORE_URL) holds every passed job's figures: $(grep -c . <<<"$runs") runs"
    sed 's/^/  /' <<<"$runs"
    # Every board's history in one place: the report over the whole store.
    in_ns runner "$FARM_LINKLAB" track report -o "$RESULTS/store/history.html" --db "$FARM_STORE_URL" >/dev/null \
        || { say "track report over the store failed"; FAILED+=("store-report"); return; }
    say "every job's history drawn from the store: $RESULTS/store/history.html"
}

farm_checks() {
    check_one_job
    check_concurrent_jobs
    # The hung board's job runs beside the never-boots one (both on host2): no added minute.
    hang_mid_probe_start
    check_never_boots
    check_hang_mid_probe
    check_exporter_killed
    check_coordinator_restart
    check_store
}
