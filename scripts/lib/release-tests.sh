# scripts/lib/release-tests.sh - scripts/run-tests' runs on other Slurm releases (source it after setup.sh;
# functions only). Off unless HPC_MAGICS_RELEASES=R1,R2 is set (as root; see
# scripts/slurm-cluster --release):
#
#   hm_releases_up             bring each listed release's cluster up (before pytest, so
#                              that tests/sites runs against them)
#   hm_release_tests USER      run HPC_MAGICS_RELEASE_TESTS (pytest arguments; default
#                              HM_SITE_TESTS, the site tests) on each release's login
#                              host as USER; sets HM_RELEASE_RESULTS and HM_RELEASE_FAILED

HM_RELEASES=()
# Off unless HPC_MAGICS_RELEASES=24.11,26.05 (root only). Not yet CI's default: the clean-clone
# check found that a clone under /tmp makes the login hosts' working directory login-only, so
# every cell there is refused (the hook must run pytest from a shared folder first).
IFS=, read -r -a HM_RELEASES <<<"${HPC_MAGICS_RELEASES:-}"
HM_RELEASE_RESULTS=()
# The site tests: cluster basics, round trip, sweep as array, multi-node ranks, checkpoint and
# requeue, staging, monitor, live checks, recorded-output parsers, cells with login and nodes
# apart, a server in a job reached from the login host (tests/sites' own tests drive the
# releases from the machine and skip on a login host). Measured: ~9 min per release.
HM_SITE_TESTS="tests/test_cluster.py tests/magics/test_round_trip.py tests/magics/test_sweep.py tests/magics/test_monitor.py tests/magics/test_scale.py tests/workshop/test_sweep_job_array.py tests/workshop/test_checkpoint_requeue.py tests/workshop/test_multi_node.py tests/test_live_checks.py tests/scheduler_parsers tests/sites/test_hosts_apart_cells.py tests/server/test_server_in_job.py"
HM_RELEASE_FAILED=()

hm_releases_up() {
  local r t0
  [ ${#HM_RELEASES[@]} -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || hm_die "HPC_MAGICS_RELEASES needs root (the release clusters live in chroots and namespaces)"
  for r in "${HM_RELEASES[@]}"; do
    t0=$(date +%s)
    bash "$REPO_ROOT/scripts/slurm-cluster" --release "$r" up \
      || hm_die "scripts/slurm-cluster --release $r up failed (see above)"
    hm_log "release $r up in $(($(date +%s) - t0)) s"
  done
}

hm_release_tests() {
  local user=$1 r home rc t0 log summary tests
  [ ${#HM_RELEASES[@]} -gt 0 ] || return 0
  read -r -a tests <<<"${HPC_MAGICS_RELEASE_TESTS:-$HM_SITE_TESTS}"
  home=$(getent passwd "$user" | cut -d: -f6)
  # test paths from the clone's root, so that pytest can start elsewhere
  local t absolute=()
  for t in "${tests[@]}"; do
    case $t in -*|/*) absolute+=("$t") ;; *) absolute+=("$REPO_ROOT/$t") ;; esac
  done
  for r in "${HM_RELEASES[@]}"; do
    t0=$(date +%s)
    log=$(mktemp /tmp/hpc-magics-release-pytest.XXXXXX)
    runuser -u "$user" -- mkdir -p "$home/.cache/hpc-magics/release-$r-run"
    hm_log "pytest ${tests[*]} on release $r's login host (as $user)"
    set +e
    # pytest starts in the user's home and its tmp_path is there too: the login host's /tmp
    # is its own, and a clone under /tmp would make every cell's working directory one the
    # nodes cannot see (refused before submitting, as on a site)
    (cd "$home/.cache/hpc-magics/release-$r-run" &&
      env -u SUDO_USER bash "$REPO_ROOT/scripts/slurm-cluster" --release "$r" exec --user "$user" -- \
        python -m pytest -p no:cacheprovider --rootdir="$REPO_ROOT" -c "$REPO_ROOT/pyproject.toml" \
        --basetemp="$home/.cache/hpc-magics/release-$r-tmp" "${absolute[@]}") 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    set -e
    summary=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
    rm -f "$log"
    HM_RELEASE_RESULTS+=("release $r: $summary (exit $rc, $(($(date +%s) - t0)) s)")
    [ "$rc" = 0 ] || HM_RELEASE_FAILED+=("pytest-$r")
  done
}
