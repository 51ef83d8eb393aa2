# scripts/lib/release-tests.sh - scripts/run-tests' runs on other Slurm releases (source it after setup.sh;
# functions only). HPC_MAGICS_RELEASES=R1,R2 (default 22.05,24.11,26.05 as root; empty: none; an
# ordinary user runs none, saying why: see scripts/slurm-cluster --release):
#
#   hm_releases_up             bring each listed release's cluster up (before pytest, so
#                              that tests/sites runs against them)
#   hm_release_tests USER      run HPC_MAGICS_RELEASE_TESTS (pytest arguments; default
#                              HM_SITE_TESTS, the site tests) on each release's login
#                              host as USER, all releases at once (each has its own
#                              cluster and network namespace); sets HM_RELEASE_RESULTS and
#                              HM_RELEASE_FAILED

HM_RELEASES=()
HM_RELEASE_RESULTS=()
HM_RELEASES_DEFAULT=22.05,24.11,26.05
if [ "$(id -u)" = 0 ]; then
  IFS=, read -r -a HM_RELEASES <<<"${HPC_MAGICS_RELEASES-$HM_RELEASES_DEFAULT}"
elif [ -n "${HPC_MAGICS_RELEASES-$HM_RELEASES_DEFAULT}" ]; then
  HM_RELEASE_RESULTS+=("releases ${HPC_MAGICS_RELEASES-$HM_RELEASES_DEFAULT}: skipped, not root (their clusters live in chroots and namespaces: run scripts/run-tests as root)")
  hm_log "${HM_RELEASE_RESULTS[0]}"
fi
# tests/sites (in the main suite) tries these releases only; empty: none
HPC_MAGICS_RELEASES=$(IFS=,; echo "${HM_RELEASES[*]}")
export HPC_MAGICS_RELEASES
# The site tests: cluster basics, round trip, sweep as array, multi-node ranks, checkpoint and
# requeue, staging, monitor, live checks, recorded-output parsers, cells with login and nodes
# apart, a cell's live output, %debug on the node's frames, reruns and the cell cache (a
# real kernel on the login host, the job on nodes apart), a server in a job reached from
# the login host (tests/sites' own tests drive the releases from the machine and skip on a
# login host), and the fault drills (they stop that release's daemons only; one pytest a
# release, so nothing else runs beside them there).
# Measured: ~9 min per release, the drills ~4 min more, the four tests/magics files of live
# output, %debug, reruns and the cache ~4 min more (2.5 of them the TIMEOUT rerun's jobs).
HM_SITE_TESTS="tests/drills tests/test_cluster.py tests/magics/test_round_trip.py tests/magics/test_sweep.py tests/magics/test_monitor.py tests/magics/test_scale.py tests/workshop/test_sweep_job_array.py tests/workshop/test_checkpoint_requeue.py tests/workshop/test_multi_node.py tests/test_live_checks.py tests/scheduler_parsers tests/sites/test_hosts_apart_cells.py tests/magics/test_live_output.py tests/magics/test_postmortem.py tests/magics/test_rerun.py tests/magics/test_cell_cache.py tests/server/test_server_in_job.py"
HM_RELEASE_FAILED=()

# pytest arguments for the main suite: with the default site tests, the main suite leaves out
# tests/sites' runs of two of their files on each login host (the hook runs those files there
# after the main suite; twice would only add load beside the parallel phase)
hm_release_main_suite_args() {
  HM_MAIN_SUITE_ARGS=()
  [ ${#HM_RELEASES[@]} -gt 0 ] && [ -z "${HPC_MAGICS_RELEASE_TESTS:-}" ] || return 0
  HM_MAIN_SUITE_ARGS=(--deselect tests/sites/test_release_clusters.py::test_end_to_end_on_the_login_host)
}

# a release that does not come up is a failure of its own: the main suite still runs
hm_releases_up() {
  local r t0 up=()
  [ ${#HM_RELEASES[@]} -gt 0 ] || return 0
  for r in "${HM_RELEASES[@]}"; do
    t0=$(date +%s)
    if bash "$REPO_ROOT/scripts/slurm-cluster" --release "$r" up; then
      hm_log "release $r up in $(($(date +%s) - t0)) s"
      up+=("$r")
    else
      HM_RELEASE_RESULTS+=("release $r: FAILED: scripts/slurm-cluster --release $r up (see above)")
      HM_RELEASE_FAILED+=("up-$r")
    fi
  done
  HM_RELEASES=("${up[@]}")
  HPC_MAGICS_RELEASES=$(IFS=,; echo "${HM_RELEASES[*]}")
}

hm_release_tests() {
  local user=$1 r home t0 tests runs
  [ ${#HM_RELEASES[@]} -gt 0 ] || return 0
  read -r -a tests <<<"${HPC_MAGICS_RELEASE_TESTS:-$HM_SITE_TESTS}"
  home=$(getent passwd "$user" | cut -d: -f6)
  # test paths from the clone's root, so that pytest can start elsewhere
  local t absolute=()
  for t in "${tests[@]}"; do
    case $t in -*|/*) absolute+=("$t") ;; *) absolute+=("$REPO_ROOT/$t") ;; esac
  done
  runs=$(mktemp -d /tmp/hpc-magics-release-runs.XXXXXX)
  t0=$(date +%s)
  hm_log "pytest ${tests[*]} on the login hosts of releases ${HM_RELEASES[*]}, all at once (as $user); their output follows when all have ended"
  for r in "${HM_RELEASES[@]}"; do
    hm_release_pytest "$r" "$user" "$home" "${absolute[@]}" >"$runs/$r.log" 2>&1 &
  done
  wait
  for r in "${HM_RELEASES[@]}"; do
    hm_log "release $r: pytest output"
    cat "$runs/$r.log"
    # the last line is hm_release_pytest's "exit RC after S s"; pytest's summary is before it
    local rc summary took
    read -r _ rc _ took _ < <(tail -n 1 "$runs/$r.log")
    # pytest's own summary line ("== 3 failed, 12 passed in 4.5s =="): what an interpreter
    # prints at its exit may follow it
    summary=$(hm_pytest_summary "$runs/$r.log")
    HM_RELEASE_RESULTS+=("release $r: $summary (exit $rc, $took s; all releases in $(($(date +%s) - t0)) s)")
    [ "$rc" = 0 ] || HM_RELEASE_FAILED+=("pytest-$r")
  done
  rm -rf "$runs"
}

# hm_release_pytest R USER HOME TESTS...: pytest on release R's login host; its last line is
# "exit RC after S s"
hm_release_pytest() {
  local r=$1 user=$2 home=$3 rc t0; shift 3
  t0=$(date +%s)
  runuser -u "$user" -- mkdir -p "$home/.cache/hpc-magics/release-$r-run"
  set +e
  # pytest starts in the user's home and its tmp_path is there too: the login host's /tmp
  # is its own, and a tmp_path there would be a working directory the nodes cannot see
  # (refused before submitting, as on a site)
  (cd "$home/.cache/hpc-magics/release-$r-run" &&
    env -u SUDO_USER bash "$REPO_ROOT/scripts/slurm-cluster" --release "$r" exec --user "$user" -- \
      python -m pytest -p no:cacheprovider --rootdir="$REPO_ROOT" -c "$REPO_ROOT/pyproject.toml" \
      --durations=10 --basetemp="$home/.cache/hpc-magics/release-$r-tmp" "$@")
  rc=$?
  set -e
  echo "exit $rc after $(($(date +%s) - t0)) s"
}
