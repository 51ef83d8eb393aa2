# scripts/lib/setup.sh - shared set-up of scripts/run-tests and scripts/run-lab.
# Source it; it defines functions only (plus REPO_ROOT and VENV).
#
#   hm_apt_install PKG...      install the Debian packages that are missing
#   hm_python_env              .venv in the repo with `pip install -e '.[test]'`, on PATH
#   hm_cluster_up              start the Slurm test cluster (scripts/slurm-cluster up)

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
  command -v python3 >/dev/null || pkgs+=(python3)
  # Debian ships ensurepip (which `python3 -m venv` needs) in python3-venv
  if ! command -v python3 >/dev/null || ! python3 -c 'import ensurepip' 2>/dev/null; then
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

# A fingerprint of what the editable install depends on: when it changes, reinstall.
hm_install_fingerprint() {
  (cd "$REPO_ROOT" && {
    python3 --version
    sha256sum pyproject.toml
    # the labextension's sources, not its build output (git ignores that)
    if [ -d labextension ] && git rev-parse --git-dir >/dev/null 2>&1; then
      git ls-files -z --cached --others --exclude-standard labextension \
        | LC_ALL=C sort -z | xargs -0 -r sha256sum
    elif [ -d labextension ]; then
      date +%s   # no git: always reinstall
    fi
  } 2>&1 | sha256sum | cut -d' ' -f1)
}

hm_python_env() {
  local stamp=$VENV/.hpc-magics-installed fingerprint
  if [ -d "$VENV" ] && ! "$VENV/bin/python" -c '' 2>/dev/null; then
    hm_log "removing broken $VENV"; rm -rf "$VENV"
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    hm_log "creating $VENV"
    python3 -m venv "$VENV" || hm_die "python3 -m venv $VENV failed"
  fi
  fingerprint=$(hm_install_fingerprint)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$fingerprint" ]; then
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

hm_cluster_up() {
  hm_log "starting the Slurm test cluster (scripts/slurm-cluster up)"
  bash "$REPO_ROOT/scripts/slurm-cluster" up || hm_die "the Slurm test cluster did not start (see above)"
}
