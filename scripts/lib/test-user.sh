# scripts/lib/test-user.sh - scripts/run-tests' set-up for running pytest as an ordinary
# user (source it after setup.sh; run as root; functions only, plus SUDOERS_FILE).
#
#   hm_give_user_the_clone USER        USER can read the clone and run its .venv
#   hm_install_sudo_rule USER SECOND   USER may run scripts/slurm-cluster as root and
#                                      anything as SECOND, without a password
#   hm_remove_sudo_rule                remove that rule if this clone wrote it

# one file per clone: runs from two clones at once (developers' worktrees) keep their own
# rule (sudoers.d skips names with a dot, so a hash of the clone's path names it)
SUDOERS_FILE=/etc/sudoers.d/hpc-magics-tests-$(printf '%s' "$REPO_ROOT" | sha1sum | cut -c1-12)

# the test user must reach the clone and its .venv wherever it is (CI clones into a
# private mktemp folder): let others search the folders above it and read the clone
hm_give_user_the_clone() {
  local user=$1 dir
  runuser -u "$user" -- "$VENV/bin/python" -c 'import hpc_magics, pytest' 2>/dev/null && return 0
  dir=$(dirname "$REPO_ROOT")
  while [ "$dir" != / ]; do
    case "$(stat -c %A "$dir" | cut -c10)" in
      x|t) ;;
      *) hm_log "chmod o+x $dir (so $user reaches the clone)"; chmod o+x "$dir" ;;
    esac
    dir=$(dirname "$dir")
  done
  runuser -u "$user" -- "$VENV/bin/python" -c 'import hpc_magics, pytest' 2>/dev/null && return 0
  hm_log "chmod -R go+rX $REPO_ROOT (so $user reads the clone and its .venv)"
  chmod -R go+rX "$REPO_ROOT"
  runuser -u "$user" -- "$VENV/bin/python" -c 'import hpc_magics, pytest' \
    || hm_die "$user cannot import hpc_magics and pytest from $VENV"
}

# sudoers needs \ , : = and blanks in a command path escaped
hm_sudoers_escape() { printf '%s' "$1" | sed 's/[\\ ,:=]/\\&/g'; }

hm_install_sudo_rule() {
  local user=$1 second=$2 cluster_script=$REPO_ROOT/scripts/slurm-cluster tmp
  # the rule runs this file as root: it must not be the test user's to change
  if runuser -u "$user" -- test -w "$cluster_script" \
     || runuser -u "$user" -- test -w "$(dirname "$cluster_script")"; then
    hm_die "$user may change $cluster_script: refusing to let it run as root via sudo"
  fi
  tmp=$(mktemp)
  cat >"$tmp" <<RULE
# written by $REPO_ROOT/scripts/run-tests; removed when it ends
$user ALL=(root) NOPASSWD: $(hm_sudoers_escape "$cluster_script")
$user ALL=($second) NOPASSWD: ALL
RULE
  visudo -c -q -f "$tmp" || { rm -f "$tmp"; hm_die "the sudo rule for $user does not parse"; }
  install -m 440 -o root -g root "$tmp" "$SUDOERS_FILE"
  rm -f "$tmp"
}

hm_remove_sudo_rule() {
  rm -f "$SUDOERS_FILE"
}
