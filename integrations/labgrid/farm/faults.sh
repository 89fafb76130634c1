# Sourced by farm/run-farm: the faults a farm has, each a check adding to FAILED.

# Board $2 on power switch $1 (HOST:PORT) is on: "1", off: "0" (asked from the runners' side).
power_state() {
    in_ns runner python3 -c 'import sys, urllib.request as u; print(u.urlopen(sys.argv[1], timeout=10).read().decode())' \
        "http://$1/power/$2" 2>/dev/null || echo "?"
}

# A board that never boots (lf-riscv-wrong: flashed with the wrong image): its job fails naming
# the place and the console's last lines, the board is powered off, the place released.
check_never_boots() {
    local out="$FARM_RUN/never-boots.out"
    say "fault: a board that never boots (board=riscv32-virt image=phy10-bench, the wrong image)"
    if run_job never-boots board=riscv32-virt image=phy10-bench >"$out"; then
        say "the never-boots job passed"; FAILED+=("never-boots-passed")
    fi
    cat "$out"
    grep -q "^job never-boots: FAILED on lf-riscv-wrong .*never printed its boot line.*console's last lines" "$out" \
        || { say "never-boots: the failure did not name the place and the console's last lines"; FAILED+=("never-boots-message"); }
    [ "$(power_state 198.19.64.12:8000 2)" = 0 ] \
        || { say "never-boots: lf-riscv-wrong was left powered on"; FAILED+=("never-boots-power"); }
    [[ "$(places_held)" != *"lf-riscv-wrong:"* ]] \
        || { say "never-boots: lf-riscv-wrong was left acquired"; FAILED+=("never-boots-place"); }
}

# Waits up to $1 s for "$2..." to succeed.
await_true() {
    local until=$(($(date +%s) + $1)); shift
    until "$@"; do
        [ "$(date +%s)" -le "$until" ] || return 1
        sleep 1
    done
}
board1_on() { [ "$(power_state 198.19.64.11:8000 0)" = 1 ]; }
place_listed() { local l; l=$(lgc resources "*/$1/*" 2>/dev/null) && [[ "$l" == *NetworkPowerPort* ]]; }

# host1's exporter killed while a job runs on its board lf-mps2-main: the job fails saying so
# within 120 s (a generous bound), the board is powered off, the place released; once the
# exporter is back, the place is listed again and a job on it passes.
check_exporter_killed() {
    local out="$FARM_RUN/exporter-killed.out" pid killed took
    say "fault: host1's exporter killed during a job on board=mps2-an385 image=main"
    # A 30 s probe: the job is still under way when the watch notices (every 5 s).
    FARM_PROBE_DURATION=30 run_job exporter-killed board=mps2-an385 image=main >"$out" &
    pid=$!
    await_true 120 board1_on || say "exporter-killed: the board was never powered on"
    kill -9 "$(cat "$FARM_RUN/host1-exporter.pid")"
    killed=$(date +%s)
    say "killed host1's labgrid-exporter (pid $(cat "$FARM_RUN/host1-exporter.pid"))"
    if wait "$pid"; then
        say "the exporter-killed job passed"; FAILED+=("exporter-killed-passed")
    fi
    took=$(($(date +%s) - killed))
    cat "$out"
    say "the job ended $took s after the exporter was killed"
    [ "$took" -le 120 ] || { say "exporter-killed: the job took over 120 s to end"; FAILED+=("exporter-killed-bound"); }
    grep -q "^job exporter-killed: FAILED on lf-mps2-main .*exporter went away" "$out" \
        || { say "exporter-killed: the failure did not say the exporter went away"; FAILED+=("exporter-killed-message"); }
    [ "$(power_state 198.19.64.11:8000 0)" = 0 ] \
        || { say "exporter-killed: lf-mps2-main was left powered on"; FAILED+=("exporter-killed-power"); }
    [[ "$(places_held)" != *"lf-mps2-main:"* ]] \
        || { say "exporter-killed: lf-mps2-main was left acquired"; FAILED+=("exporter-killed-place"); }
    farm_exporter_up host1 198.19.64.11
    if await_true 60 place_listed lf-mps2-main; then
        say "host1's exporter restarted: lf-mps2-main is listed again"
        run_job after-restart board=mps2-an385 image=main || FAILED+=("job-after-restart")
    else
        say "exporter-killed: lf-mps2-main did not come back within 60 s of the exporter's restart"
        FAILED+=("exporter-killed-comeback")
    fi
}

# The coordinator restarted between jobs (SIGTERM, then started again from its directory, where
# it keeps places.yaml): the places come back with their tags, the exporters reconnect (each
# exits 100 and is started again), none is left acquired, and a job passes after it.
check_coordinator_restart() {
    local pid places
    say "fault: the coordinator restarted between jobs"
    pid=$(cat "$FARM_RUN/coordinator.pid")
    kill "$pid"
    await_true 30 eval '! kill -0 '"$pid"' 2>/dev/null' || { say "the coordinator did not stop"; FAILED+=("coordinator-stop"); return; }
    farm_coordinator_up || { FAILED+=("coordinator-restart"); return; }
    if farm_await_places 90; then
        places=$(lgc -v places 2>/dev/null | grep -c 'tags: board=' || true)
        say "coordinator restarted: $places places with their tags, every exporter's resources listed again"
        [ "$places" -eq "$(grep -cv '^#' "$FARM_DIR/boards.txt")" ] || { say "places lost in the restart"; FAILED+=("coordinator-places"); }
        check_places_free
        run_job after-coordinator board=riscv32-virt image=embassy || FAILED+=("job-after-coordinator")
    else
        FAILED+=("coordinator-exporters")
    fi
}

# A board that hangs mid-probe: lf-riscv-embassy (host2's outlet 1, 198.19.64.104) frozen by
# its power server's fault hook (GET /hang/1: SIGSTOP to its QEMU, the power left on) once its
# job's `linklab probe` runs. Started in the background (hang_mid_probe_start) beside the
# never-boots fault, whose board is also on host2, and checked by check_hang_mid_probe.
HANG_ADDRESS=198.19.64.104
probe_running() { pgrep -f "linklab probe $HANG_ADDRESS " >/dev/null; }
hang_mid_probe_start() {
    say "fault: a board that hangs mid-probe (board=riscv32-virt image=embassy, frozen once its probe runs)"
    run_job hang-mid-probe board=riscv32-virt image=embassy >"$FARM_RUN/hang.out" &
    HANG_JOB=$!
    (
        if await_true 150 probe_running; then
            sleep 1
            in_ns host2 python3 -c 'import sys, urllib.request as u; print(u.urlopen(sys.argv[1], timeout=10).read().decode())' \
                http://198.19.64.12:8000/hang/1 >"$FARM_RUN/hang.hook" 2>&1
        else
            echo "the job's probe never ran" >"$FARM_RUN/hang.hook"
        fi
    ) &
    HANG_HOOK=$!
}

# The hung board's job failed naming the place and the hang, after one probe run; the power
# server switched it off, on (the one power cycle) and off again after it froze; nothing it ran
# is left, its power is off and its place released.
check_hang_mid_probe() {
    local out="$FARM_RUN/hang.out" after runs pid left=""
    if wait "$HANG_JOB"; then
        say "the hang-mid-probe job passed"; FAILED+=("hang-passed")
    fi
    wait "$HANG_HOOK" || true
    cat "$out"
    [ "$(cat "$FARM_RUN/hang.hook")" = hung ] \
        || { say "hang-mid-probe: the board was not frozen: $(cat "$FARM_RUN/hang.hook")"; FAILED+=("hang-hook"); return; }
    grep -q "^job hang-mid-probe: FAILED on lf-riscv-embassy .*riscv32-virt hung: $HANG_ADDRESS stopped answering .*power-cycled once" "$out" \
        || { say "hang-mid-probe: the failure did not name the place and the hang"; FAILED+=("hang-message"); }
    runs=$(grep -c "linklab probe $HANG_ADDRESS " "$RESULTS/hang-mid-probe/pytest.txt" || true)
    [ "$runs" = 1 ] || { say "hang-mid-probe: $runs probe runs (want 1: no rerun)"; FAILED+=("hang-rerun"); }
    # Board 1's power switchings after the freeze: off, on (the cycle), off (the teardown).
    after=$(sed -n '/^hang: board 1 /,$p' "$FARM_LOGS/host2-power.log" | sed -n 's/^power: board 1 ([^)]*) //p' | tr '\n' ' ')
    say "hang-mid-probe: $(grep '^hang: board 1 ' "$FARM_LOGS/host2-power.log"); board 1's power after it: $after"
    [ "$after" = "off on off " ] || { say "hang-mid-probe: not one power cycle then off"; FAILED+=("hang-power-cycle"); }
    [ "$(power_state 198.19.64.12:8000 1)" = 0 ] \
        || { say "hang-mid-probe: lf-riscv-embassy was left powered on"; FAILED+=("hang-power"); }
    for pid in $(sed -n 's/^hang: board 1 .*pids \([0-9 ]*\)).*/\1/p' "$FARM_LOGS/host2-power.log"); do
        ! kill -0 "$pid" 2>/dev/null || left+=" $pid"
    done
    [ -z "$left" ] || { say "hang-mid-probe: the frozen board's processes are left:$left"; FAILED+=("hang-leftovers"); }
    [[ "$(places_held)" != *"lf-riscv-embassy:"* ]] \
        || { say "hang-mid-probe: lf-riscv-embassy was left acquired"; FAILED+=("hang-place"); }
}
