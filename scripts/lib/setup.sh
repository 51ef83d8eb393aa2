# scripts/lib/setup.sh - shared set-up of scripts/run-tests and scripts/run-lab.
# Source it; it defines functions only (plus REPO_ROOT and VENV).
#
#   hm_apt_install PKG...      install the Debian packages that are missing
#   hm_python_env              .venv in the repo with `pip install -e '.[test]'`, on PATH
#   hm_cluster_up              start the Slurm test cluster (scripts/slurm-cluster up);
#                              as an ordinary user, check that it is up

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VENV=$REPO_ROOT/.venv
HM_APT_LOG=/tmp/hpc-magics-apt.log
HM_PIP_LOG=$VENV/pip-install.log

hm_log() { printf '[%s] %s\n' "$(basename "$0")" "$*"; }
hm_die() { printf '%s: ERROR: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

hm_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }

hm_apt_install() {
  local missing=() p
  command -v dpkg-query >/dev/null || hm_die "not a Debian system: install $* yourself"
  for p in "$@"; do hm_installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || hm_die "run as root to install ${missing[*]} (or install them first)"
  hm_log "apt-get install ${missing[*]} (log: $HM_APT_LOG)"
  export DEBIAN_FRONTEND=noninteractive
  local opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=300)
  # A fresh image has no package lists: update first then, or when an install fails.
  if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null \
     || ! apt-get install "${opts[@]}" "${missing[@]}" >"$HM_APT_LOG" 2>&1; then
    apt-get update -q -o DPkg::Lock::Timeout=300 >>"$HM_APT_LOG" 2>&1 \
      || { tail -n 15 "$HM_APT_LOG" >&2; hm_die "apt-get update failed"; }
    apt-get install "${opts[@]}" "${missing[@]}" >>"$HM_APT_LOG" 2>&1 \
      || { tail -n 15 "$HM_APT_LOG" >&2; hm_die "apt-get install ${missing[*]} failed"; }
  fi
}

# hm_system_packages [browser]: what both commands need; `browser` adds Chromium for
# the JupyterLab browser tests.
hm_system_packages() {
  local pkgs=(ca-certificates git)
  [ "${1:-}" = browser ] && pkgs+=(chromium fonts-liberation)
  hm_pick_python
  [ -n "$HM_PYTHON" ] || pkgs+=(python3)
  # Debian ships ensurepip (which `python3 -m venv` needs) in python3-venv
  if [ -z "$HM_PYTHON" ] || ! "$HM_PYTHON" -c 'import ensurepip' 2>/dev/null; then
    pkgs+=(python3-venv)
  fi
  # the labextension is built with node/npm when the package is installed
  command -v node >/dev/null || pkgs+=(nodejs npm)
  hm_apt_install "${pkgs[@]}"
  # rspack (the labextension's bundler) needs node ^20.19 or >= 22.12; Debian 12's own is 18
  local node_version
  node_version=$(node -p 'process.versions.node' 2>/dev/null || echo 0)
  node -e 'const [a,b]=process.versions.node.split(".").map(Number);
           process.exit((a===20&&b>=19)||(a===22&&b>=12)||a>22?0:1)' 2>/dev/null \
    || hm_die "node $node_version is too old to build the labextension: install node 20.19+ or 22.12+"
}

hm_git() { git -c safe.directory="$REPO_ROOT" "$@"; }

# hm_world_reachable PATH: every user may run it (each folder up to / searchable by others)
hm_world_reachable() {
  local dir
  dir=$(readlink -f "$1" 2>/dev/null) || return 1
  while :; do
    case "$(stat -c %A "$dir" 2>/dev/null | cut -c10)" in x|t) ;; *) return 1 ;; esac
    [ "$dir" = / ] && return 0
    dir=$(dirname "$dir")
  done
}

# hm_pick_python: HM_PYTHON, the real interpreter the .venv is made from, empty if none.
# Every user must be able to run it (the suite runs as an ordinary user, jobs run as
# their submitter): a python3 under a private home (pyenv in /root) is not, so Debian's
# /usr/bin/python3 is taken then.
hm_pick_python() {
  HM_PYTHON=""
  command -v python3 >/dev/null || return 0
  HM_PYTHON=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null) || HM_PYTHON=""
  if { [ -z "$HM_PYTHON" ] || ! hm_world_reachable "$HM_PYTHON"; } && [ -x /usr/bin/python3 ]; then
    HM_PYTHON=$(readlink -f /usr/bin/python3)
  fi
}

# A fingerprint of what the editable install depends on: when it changes, reinstall.
hm_install_fingerprint() {
  (cd "$REPO_ROOT" && {
    "$VENV/bin/python" --version
    sha256sum pyproject.toml
    # the labextension's sources, not its build output (git ignores that)
    # safe.directory: an ordinary user (the test user) reads root's clone too
    if [ -d labextension ] && hm_git rev-parse --git-dir >/dev/null 2>&1; then
      hm_git ls-files -z --cached --others --exclude-standard labextension \
        | LC_ALL=C sort -z | xargs -0 -r sha256sum
    elif [ -d labextension ]; then
      date +%s   # no git: always reinstall
    fi
  } 2>&1 | sha256sum | cut -d' ' -f1)
}

hm_python_env() {
  local stamp=$VENV/.hpc-magics-installed fingerprint
  local made_from=""
  hm_pick_python
  [ -n "$HM_PYTHON" ] || hm_die "no python3 found: install python3"
  if [ -d "$VENV" ] && ! "$VENV/bin/python" -c '' 2>/dev/null; then
    hm_log "removing broken $VENV"; rm -rf "$VENV"
  fi
  [ -x "$VENV/bin/python" ] && made_from=$(readlink -f "$VENV/bin/python")
  if [ -n "$made_from" ] && [ "$made_from" != "$HM_PYTHON" ] && [ -w "$VENV" ]; then
    hm_log "recreating $VENV from $HM_PYTHON ($made_from is not runnable by every user)"
    rm -rf "$VENV"
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    hm_log "creating $VENV from $HM_PYTHON"
    "$HM_PYTHON" -m venv "$VENV" || hm_die "$HM_PYTHON -m venv $VENV failed"
  fi
  fingerprint=$(hm_install_fingerprint)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$fingerprint" ]; then
    [ -w "$VENV" ] || hm_die "$VENV is out of date and not writable by $(id -un): run this as root once"
    hm_log "pip install -e '.[test]' (log: $HM_PIP_LOG)"
    rm -f "$stamp"
    if ! (cd "$REPO_ROOT" && "$VENV/bin/python" -m pip install --disable-pip-version-check \
            -e '.[test]') >"$HM_PIP_LOG" 2>&1; then
      tail -n 25 "$HM_PIP_LOG" >&2
      hm_die "pip install -e '.[test]' failed (full log: $HM_PIP_LOG)"
    fi
    echo "$fingerprint" >"$stamp"
  fi
  export VIRTUAL_ENV=$VENV
  export PATH=$VENV/bin:$PATH
  hm_log "python environment ready: $VENV"
}

# hm_cluster_up: as root, start the test cluster; as an ordinary user, check it is usable
hm_cluster_up() {
  if [ "$(id -u)" != 0 ]; then
    bash "$REPO_ROOT/scripts/slurm-cluster" status >/dev/null 2>&1 \
      || hm_die "the Slurm test cluster is not usable: start it as root (scripts/slurm-cluster up)"
    hm_log "Slurm test cluster is up (running as $(id -un))"
    return 0
  fi
  hm_log "starting the Slurm test cluster (scripts/slurm-cluster up)"
  bash "$REPO_ROOT/scripts/slurm-cluster" up || hm_die "the Slurm test cluster did not start (see above)"
}
