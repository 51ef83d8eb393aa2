# scripts/lib/test-phases.sh - scripts/run-tests' pytest in two phases (source it; functions
# only). The suite shares one Slurm test cluster (2 nodes x 4 CPUs):
#
#   cluster   every test that uses the cluster (marker `slurm`) and is not `serial`, on
#             HPC_MAGICS_TEST_WORKERS pytest-xdist workers (default 4: most tests wait on
#             Slurm or a kernel, not on a CPU), a file's tests on one worker (--dist
#             loadfile: a module's kernel, server or browser is started once)
#   serial    the tests marked `serial` (the fault drills, which stop daemons and nodes, and
#             tests that change accounting), one at a time, with no other cluster test beside
#             them; beside them, on the other workers, every test that needs no cluster
#             (the `serial` phase's output comes first, then theirs)
#
#   hm_pytest_phases CMD_ARRAY ARGS...
#       CMD_ARRAY names an array holding the pytest command (it may hold a `--` of its own);
#       runs both phases with ARGS (a `-m EXPR` in ARGS narrows each phase), sets
#       HM_PHASE_RESULTS (one summary line a phase) and returns non-zero if a phase failed.
#       HPC_MAGICS_TEST_WORKERS=1 runs one phase, in order.

HM_PHASE_RESULTS=()

# hm_pytest_summary LOG: pytest's summary line ("== 12 passed in 3.4s =="), else the last line
# (what an interpreter prints at its exit may follow the summary); then the corpus cases not
# run for want of their files (tests/conftest.py), if any
hm_pytest_summary() {
  local found corpus
  found=$(grep -E '^=+ .* in [0-9.]+s( \([0-9:]+\))? =+$' "$1" | tail -n 1)
  [ -n "$found" ] || found=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1)
  corpus=$(grep -oE 'corpus: [0-9]+ cases not run: files absent' "$1" | tail -n 1 || true)
  printf '%s%s' "$found" "${corpus:+ ($corpus)}"
}

hm_pytest_phases() {
  local -n cmd=$1
  local args=() user_mark="" workers=${HPC_MAGICS_TEST_WORKERS:-4} rc=0
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      -m) user_mark=$2; shift 2 ;;
      -m*) user_mark=${1#-m}; shift ;;
      *) args+=("$1"); shift ;;
    esac
  done
  [[ $workers =~ ^[0-9]+$ ]] && [ "$workers" -ge 1 ] \
    || hm_die "HPC_MAGICS_TEST_WORKERS=$workers: give a number of pytest workers, 1 or more (1: no parallel phase)"
  if [ "$workers" = 1 ]; then
    hm_pytest_phase "pytest" "$user_mark" "${cmd[@]}" "${args[@]}" || rc=1
    return $rc
  fi
  hm_pytest_phase "pytest, cluster (-n $workers)" \
    "slurm and not serial${user_mark:+ and ($user_mark)}" \
    "${cmd[@]}" -n "$workers" --dist loadfile "${args[@]}" || rc=1
  # the tests that need no cluster run beside the serial ones: a drill's outage is not
  # theirs (tests/conftest.py marks every user of the cluster fixture `slurm`)
  local beside beside_pid beside_workers=$((workers > 2 ? workers - 1 : 1))
  beside=$(mktemp -d /tmp/hpc-magics-beside.XXXXXX)
  (
    phase_rc=0
    hm_pytest_phase "pytest, no cluster (-n $beside_workers)" \
      "not slurm and not serial${user_mark:+ and ($user_mark)}" \
      "${cmd[@]}" -n "$beside_workers" --dist loadfile "${args[@]}" || phase_rc=1
    printf '%s\n' "${HM_PHASE_RESULTS[-1]}" >"$beside/result"
    exit $phase_rc
  ) >"$beside/log" 2>&1 &
  beside_pid=$!
  hm_pytest_phase "pytest, serial" "serial${user_mark:+ and ($user_mark)}" \
    "${cmd[@]}" "${args[@]}" || rc=1
  wait "$beside_pid" || rc=1
  hm_log "pytest, no cluster (beside the serial phase): its output"
  cat "$beside/log"
  HM_PHASE_RESULTS+=("$(cat "$beside/result" 2>/dev/null || echo "pytest, no cluster: no result")")
  rm -rf "$beside"
  return $rc
}

# hm_pytest_phase LABEL MARK CMD...: one pytest run; exit 5 (no test selected, e.g. a
# -m that picks no serial test) is no failure
hm_pytest_phase() {
  local label=$1 mark=$2 out rc t0; shift 2
  local color=() select=(); [ -t 1 ] && color=(--color=yes)
  [ -z "$mark" ] || select=(-m "$mark")
  out=$(mktemp /tmp/hpc-magics-pytest.XXXXXX)
  t0=$(date +%s)
  hm_log "$label${mark:+ -m \"$mark\"}"
  set +e
  "$@" "${color[@]}" "${select[@]}" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  set -e
  # pytest's own summary line ("== 12 passed in 3.4s ==") is its last non-empty line
  HM_PHASE_RESULTS+=("$label: $(hm_pytest_summary "$out") (exit $rc, $(($(date +%s) - t0)) s)")
  rm -f "$out"
  [ "$rc" = 0 ] || [ "$rc" = 5 ]
}
