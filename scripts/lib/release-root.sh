# scripts/lib/release-root.sh - the Debian roots and network namespaces of the
# `scripts/slurm-cluster --release R` clusters (source it; functions only, plus the table).
#
# Each release runs in a `debootstrap --variant=minbase` root of the Debian suite that ships
# it, kept in $RR_CACHE/roots/SUITE outside the clone and reused across runs, and in its own
# persistent network namespace (/run/netns/hpcm-RRRR), so that releases never collide with
# each other or with the cluster the host runs. The project's own scripts/slurm-cluster runs
# inside that root (marked by /etc/hpc-magics-release) in a UTS namespace of its own (host
# "ctl"); there it starts each slurmd on a host of its own (scripts/lib/release-node.sh).
#
#   rr_select R                  set RR_* for release R (dies on an unknown one)
#   rr_build_root                debootstrap + packages, when missing or the list changed
#   rr_attach                    netns + the mounts the root needs (idempotent)
#   rr_detach                    kill what still runs in the root, unmount (idempotent)
#   rr_install                   root, packages and venv, then detached: ready for an offline `up`
#   rr_in_root [--uts NAME] CMD  run CMD in the root, in the release's network namespace
#   rr_attached                  the root's mounts are in place

RR_CACHE=/var/cache/hpc-magics
RR_MIRROR=http://deb.debian.org/debian
# release -> Debian suite that ships it (Debian's own packages, nothing built here)
declare -A RR_SUITES=([22.05]=bookworm [24.11]=trixie [26.05]=sid)
RR_RELEASES="22.05 24.11 26.05"
# what every root gets; a change of this list (or of RR_ROOT_RECIPE) rebuilds the packages
RR_PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server mariadb-client
             python3 python3-venv python3-dev git ca-certificates iproute2 procps
             util-linux mount hostname psmisc less sudo)
# bump when what rr_build_root does to a root changes
RR_ROOT_RECIPE=1
# the non-loopback address slurmdbd needs to bind in a namespace that has only lo
# (its getaddrinfo uses AI_ADDRCONFIG); 192.0.2.0/24 is TEST-NET-1, never routed
RR_NETNS_ADDR=192.0.2.1/32

rr_log() { printf '[slurm-cluster %s] %s\n' "$RR_RELEASE" "$*"; }
rr_die() { echo "slurm-cluster: ERROR: $1" >&2; [ -n "${2:-}" ] && [ -r "$2" ] && tail -n 15 "$2" >&2; exit 1; }

rr_select() {
  local r=$1
  [ -n "${RR_SUITES[$r]:-}" ] || rr_die "unknown release '$r': use one of $RR_RELEASES"
  RR_RELEASE=$r
  RR_SUITE=${RR_SUITES[$r]}
  RR_ROOT=$RR_CACHE/roots/$RR_SUITE
  RR_NETNS=hpcm-${r//./}
  RR_NETNS_FILE=/run/netns/$RR_NETNS
  RR_VENV=$RR_CACHE/venvs/$r
  RR_LOG_DIR=$RR_CACHE/logs
  RR_STAMP=$RR_ROOT/.hpcm-packages
}

rr_apt_opts() {
  local opts=(-o DPkg::Lock::Timeout=300)
  # sid's archive metadata may be past its Valid-Until date on a machine of this kind
  [ "$RR_SUITE" = sid ] && opts+=(-o Acquire::Check-Valid-Until=false)
  printf '%s\n' "${opts[@]}"
}

# the wanted state of a root: its recipe and package list (written to RR_STAMP)
rr_wanted() { printf 'recipe %s\nsuite %s\npackages %s\n' "$RR_ROOT_RECIPE" "$RR_SUITE" "${RR_PACKAGES[*]}"; }

# what this machine needs: debootstrap, ip (iproute2); a fresh Debian 12 may lack both
rr_host_tools() {
  local missing=()
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v ip >/dev/null || missing+=(iproute2)
  [ ${#missing[@]} -eq 0 ] && return 0
  rr_log "installing ${missing[*]}"
  local opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=300)
  DEBIAN_FRONTEND=noninteractive apt-get install "${opts[@]}" "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install "${opts[@]}" "${missing[@]}" >/dev/null; } \
    || rr_die "apt-get install ${missing[*]} failed"
}

rr_build_root() {
  local log t0
  mkdir -p "$RR_CACHE/roots" "$RR_LOG_DIR"
  rr_host_tools
  if [ ! -x "$RR_ROOT/usr/bin/apt-get" ]; then
    log=$RR_LOG_DIR/debootstrap-$RR_SUITE.log; t0=$(date +%s)
    rr_log "debootstrap --variant=minbase $RR_SUITE $RR_ROOT (log: $log)"
    rm -rf "$RR_ROOT.new"
    debootstrap --variant=minbase --include=ca-certificates "$RR_SUITE" "$RR_ROOT.new" "$RR_MIRROR" \
      >"$log" 2>&1 || rr_die "debootstrap $RR_SUITE failed" "$log"
    mv "$RR_ROOT.new" "$RR_ROOT"
    rr_log "root built in $(($(date +%s) - t0)) s"
  fi
  [ "$(cat "$RR_STAMP" 2>/dev/null)" = "$(rr_wanted)" ] && return 0
  log=$RR_LOG_DIR/packages-$RR_SUITE.log; t0=$(date +%s)
  rr_log "installing ${#RR_PACKAGES[@]} packages into $RR_ROOT (log: $log)"
  rr_copy_host_files
  # package scripts must not start daemons: the cluster script starts them
  printf '#!/bin/sh\nexit 101\n' >"$RR_ROOT/usr/sbin/policy-rc.d"; chmod +x "$RR_ROOT/usr/sbin/policy-rc.d"
  rr_mount_system
  local opts; mapfile -t opts < <(rr_apt_opts)
  { chroot "$RR_ROOT" apt-get "${opts[@]}" update -q \
    && chroot "$RR_ROOT" env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" install -y -q \
         --no-install-recommends "${RR_PACKAGES[@]}"; } >"$log" 2>&1 \
    || rr_die "package install in $RR_ROOT failed" "$log"
  chroot "$RR_ROOT" apt-get clean
  rr_wanted >"$RR_STAMP"
  rr_log "packages installed in $(($(date +%s) - t0)) s"
}

# files of this machine the root needs: DNS, its CA bundle (pip and git through this
# machine's proxy), pip's settings
rr_copy_host_files() {
  local f
  for f in /etc/resolv.conf /etc/ssl/certs/ca-certificates.crt /etc/pip.conf /etc/xdg/pip; do
    [ -e "$f" ] || continue
    mkdir -p "$RR_ROOT$(dirname "$f")"
    cp -rL --remove-destination "$f" "$RR_ROOT$(dirname "$f")/"
  done
}

# rr_bind SRC DEST_IN_ROOT [rbind]: bind SRC at the same path inside the root, once
rr_bind() {
  local src=$1 dst=$RR_ROOT$2
  mountpoint -q "$dst" && return 0
  if [ -d "$src" ]; then mkdir -p "$dst"; else mkdir -p "$(dirname "$dst")"; touch "$dst"; fi
  mount "--${3:-bind}" "$src" "$dst"
  # nothing done under it (an unmount on `down`) may reach this machine's own mounts,
  # where / is shared (systemd)
  mount --make-rslave "$dst"
}

rr_mount_system() {
  # the root is a mount point of its own (bound on itself, before anything is mounted in
  # it): `unshare --mount` inside the chroot needs one to make its mounts private
  if ! mountpoint -q "$RR_ROOT"; then
    mount --bind "$RR_ROOT" "$RR_ROOT" && mount --make-private "$RR_ROOT"
  fi
  mountpoint -q "$RR_ROOT/proc" || mount -t proc proc "$RR_ROOT/proc"
  # /sys brings the cgroup mounts (slurmd 24.11 wants the cgroup file system)
  rr_bind /sys /sys rbind
  rr_bind /dev /dev rbind
}

rr_netns_up() {
  if [ ! -e "$RR_NETNS_FILE" ] || ! ip netns exec "$RR_NETNS" true 2>/dev/null; then
    ip netns delete "$RR_NETNS" 2>/dev/null || true
    ip netns add "$RR_NETNS" || rr_die "ip netns add $RR_NETNS failed"
  fi
  ip -n "$RR_NETNS" link set lo up
  case "$(ip -n "$RR_NETNS" addr show dev lo)" in
    *" ${RR_NETNS_ADDR%/*}/"*) ;;
    *) ip -n "$RR_NETNS" addr add "$RR_NETNS_ADDR" dev lo ;;
  esac
}

# rr_attach CLONE: everything a running cluster needs; the clone, /home and the
# release's venv are shared with every host of the cluster (as a network file system)
rr_attach() {
  local clone=$1
  [ -d "$RR_ROOT/usr" ] || rr_die "no root at $RR_ROOT: run scripts/slurm-cluster --release $RR_RELEASE up"
  # scripts/slurm-cluster run in the root (also through sudo, which clears the
  # environment) knows by this file that it runs a release's cluster
  echo "$RR_RELEASE" >"$RR_ROOT/etc/hpc-magics-release"
  # which clone the cluster's hosts see: the nodes' mount namespaces are made at `up`
  echo "$clone" >"$RR_ROOT/etc/hpc-magics-clone"
  rr_netns_up
  rr_copy_host_files
  rr_mount_system
  rr_bind /home /home
  rr_bind "$clone" "$clone"
  mkdir -p "$RR_VENV"
  rr_bind "$RR_VENV" "$RR_VENV"
}

rr_attached() { mountpoint -q "$RR_ROOT/proc"; }

# processes whose root directory is this release's root
rr_root_pids() {
  local p root
  root=$(readlink -f "$RR_ROOT")
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && echo "${p#/proc/}"
  done
  return 0
}

rr_detach() {
  local pids m i mounts
  pids=$(rr_root_pids | tr '\n' ' ')
  if [ -n "${pids// /}" ]; then
    rr_log "stopping what still runs in the root: $pids"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do [ -z "$(rr_root_pids)" ] && break; sleep 0.1; done
    pids=$(rr_root_pids | tr '\n' ' ')
    # shellcheck disable=SC2086
    [ -n "${pids// /}" ] && kill -KILL $pids 2>/dev/null || true
  fi
  # deepest first; a path may carry several mounts (one hiding another): several passes
  for ((i = 0; i < 10; i++)); do
    mounts=$(awk -v r="$(readlink -f "$RR_ROOT")" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/self/mounts | sort -ru)
    [ -n "$mounts" ] || break
    for m in $mounts; do umount -l "$m" 2>/dev/null || true; done
  done
}

# rr_in_root [--uts NAME] CMD...: run CMD chrooted in the root, in the release's network
# namespace; with --uts, in a new UTS namespace with hostname NAME
rr_in_root() {
  local uts=()
  if [ "${1:-}" = --uts ]; then uts=(unshare --uts -- /bin/sh -c 'hostname "$0" && exec "$@"' "$2"); shift 2; fi
  nsenter --net="$RR_NETNS_FILE" -- "${uts[@]}" chroot "$RR_ROOT" "$@"
}

# ------------------------------------------------------------------ users and venv
RR_TEST_USERS=(hpcuser1 hpcuser2)
RR_TEST_GROUP=hpcproj

# the test users, in the root with the same uid/gid as on this machine (the homes are
# shared); made on this machine first if missing
rr_sync_users() {
  local u gid uid ugid
  getent group "$RR_TEST_GROUP" >/dev/null || groupadd "$RR_TEST_GROUP"
  for u in "${RR_TEST_USERS[@]}"; do
    id "$u" >/dev/null 2>&1 || { useradd --create-home --shell /bin/bash --user-group "$u"; chmod 700 "$(getent passwd "$u" | cut -d: -f6)"; }
    id -nG "$u" | tr ' ' '\n' | grep -qx "$RR_TEST_GROUP" || usermod -a -G "$RR_TEST_GROUP" "$u"
  done
  gid=$(getent group "$RR_TEST_GROUP" | cut -d: -f3)
  chroot "$RR_ROOT" getent group "$RR_TEST_GROUP" >/dev/null || chroot "$RR_ROOT" groupadd -g "$gid" "$RR_TEST_GROUP"
  for u in "${RR_TEST_USERS[@]}"; do
    uid=$(id -u "$u"); ugid=$(id -g "$u")
    chroot "$RR_ROOT" getent group "$(id -gn "$u")" >/dev/null || chroot "$RR_ROOT" groupadd -g "$ugid" "$(id -gn "$u")"
    chroot "$RR_ROOT" id "$u" >/dev/null 2>&1 \
      || chroot "$RR_ROOT" useradd -M -u "$uid" -g "$ugid" -G "$RR_TEST_GROUP" -s /bin/bash \
           -d "$(getent passwd "$u" | cut -d: -f6)" "$u"
  done
}

# rr_sudo_rule CLONE: in the root, the rule scripts/run-tests gives the test user on this
# machine (scripts/lib/test-user.sh): the suite run through `exec` acts as the second user
# and starts the (release's) cluster as root
rr_sudo_rule() {
  local clone=$1 tmp
  tmp=$(mktemp)
  printf '%s\n' "# written by scripts/slurm-cluster --release (test root only)" \
    "${RR_TEST_USERS[0]} ALL=(root) NOPASSWD: $(printf '%s' "$clone/scripts/slurm-cluster" | sed 's/[\\ ,:=]/\\&/g')" \
    "${RR_TEST_USERS[0]} ALL=(${RR_TEST_USERS[1]}) NOPASSWD: ALL" >"$tmp"
  install -m 440 -o root -g root "$tmp" "$RR_ROOT/etc/sudoers.d/hpc-magics-tests"
  rm -f "$tmp"
}

# rr_venv CLONE: a venv of the root's own Python with the clone installed (editable) and
# its test extra, at $RR_VENV (outside the clone, shared with every host of the cluster).
# Made in the root but in this machine's network namespace: pip needs the registry.
# torch is left out: the test extra pins a version that has a CPU build only for this
# image's Python; elsewhere pip would bring the CUDA build (several GB). Tests that need
# torch skip without it.
rr_venv() {
  local clone=$1 log=$RR_LOG_DIR/venv-$RR_RELEASE.log stamp=$RR_VENV/.hpc-magics-installed want t0 extra=()
  # installed from which clone (-e), its pyproject.toml, the root's python
  want=$( { echo "$clone"; cat "$clone/pyproject.toml"; chroot "$RR_ROOT" python3 --version; } | sha256sum | cut -d' ' -f1)
  [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && return 0
  [ -f "$clone/hpc_magics/labextension/package.json" ] \
    || rr_die "the labextension is not built in $clone: run scripts/run-tests (or pip install -e .) on this machine first"
  t0=$(date +%s)
  rr_log "venv $RR_VENV: pip install -e $clone and its test extra without torch (log: $log)"
  # the test extra's requirements, torch excepted, read from pyproject.toml by the root's python
  # The extra's own extras (hpc_magics[server]) go on the editable install: Debian 12's pip
  # 23.0 refuses "-e CLONE" beside "hpc_magics[server]" ("does not provide the extra").
  mapfile -t extra < <(chroot "$RR_ROOT" python3 -c '
import re, sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["test"]
own = [re.match(r"hpc[-_]magics\[(.*)\]", d.replace(" ", "")) for d in deps]
print(",".join(m.group(1) for m in own if m))
print("\n".join(d for d, m in zip(deps, own) if not m and not d.replace(" ", "").startswith("torch")))' "$clone/pyproject.toml")
  [ ${#extra[@]} -gt 1 ] || rr_die "no test extra read from $clone/pyproject.toml"
  local editable=$clone${extra[0]:+[${extra[0]}]}
  extra=("${extra[@]:1}")
  [ -x "$RR_VENV/bin/python" ] || chroot "$RR_ROOT" python3 -m venv "$RR_VENV" >"$log" 2>&1 \
    || rr_die "python3 -m venv $RR_VENV failed" "$log"
  # HATCH_BUILD_NO_HOOKS: the labextension is prebuilt in the clone (the root has no node)
  if ! chroot "$RR_ROOT" env -i PATH=/usr/bin:/bin HOME=/root HATCH_BUILD_NO_HOOKS=true \
        "$RR_VENV/bin/pip" install --disable-pip-version-check -q -e "$editable" "${extra[@]}" >>"$log" 2>&1; then
    rr_die "pip install into $RR_VENV failed" "$log"
  fi
  chmod -R go+rX "$RR_VENV"
  echo "$want" >"$stamp"
  rr_log "venv ready in $(($(date +%s) - t0)) s"
}

# ------------------------------------------------------------------------ commands
rr_repo() { cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd; }
# the clone a running cluster was brought up from (its hosts see that one), else ours
rr_attached_clone() {
  local clone
  clone=$(cat "$RR_ROOT/etc/hpc-magics-clone" 2>/dev/null || true)
  if rr_attached && [ -n "$clone" ] && [ -d "$RR_ROOT$clone/scripts" ]; then echo "$clone"; else rr_repo; fi
}

# rr_cluster CMD...: scripts/slurm-cluster CMD inside the root, on host "ctl"
rr_cluster() {
  local clone; clone=$(rr_attached_clone)
  rr_in_root --uts ctl env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    ${SUDO_USER:+SUDO_USER="$SUDO_USER"} \
    /bin/bash "$clone/scripts/slurm-cluster" "$@" 8>&-   # the daemons must not hold our lock
}

rr_up() {
  local clone t0; clone=$(rr_repo); t0=$(date +%s)
  local root
  # a clone under /tmp (CI's mktemp folder): each host binds it at the same path in its own
  # /tmp (start_slurmd, rr_exec), as a site's project file system. Under /var/tmp the hosts
  # share the root's. /dev/shm (memory) was never tried.
  case "$clone/" in /dev/shm/*)
    rr_die "the clone $clone is under /dev/shm, untried for a release cluster; clone it elsewhere (/tmp, /home, /srv, /work)" ;;
  esac
  rr_build_root
  # brought up from another clone: its nodes see that clone only, and the release's venv
  # is installed from it; start over from this one (also when that clone is gone since:
  # rr_attached_clone then names ours, and the nodes kept seeing the deleted one)
  local recorded; recorded=$(cat "$RR_ROOT/etc/hpc-magics-clone" 2>/dev/null || true)
  if rr_attached && [ -n "$recorded" ] && [ "$recorded" != "$clone" ]; then
    rr_log "release $RR_RELEASE runs from $recorded: restarting it from $clone"
    rr_down
  fi
  # not attached: nothing runs in the root (a reboot, or `down`); pid files left from
  # before would name other processes now
  rr_attached || rm -f "$RR_ROOT"/run/slurm/*.pid "$RR_ROOT"/run/munge/*.pid "$RR_ROOT"/run/mysqld/*.pid
  rr_attach "$clone"
  rr_sync_users
  rr_sudo_rule "$clone"
  rr_venv "$clone"
  rr_cluster up
  rr_log "release $RR_RELEASE up in $(($(date +%s) - t0)) s (root $RR_ROOT, network namespace $RR_NETNS)"
}

# rr_install: the root, its packages and the release's venv, then nothing left mounted or
# running (scripts/run-tests with HPC_MAGICS_INSTALL_ONLY=1: scripts/fresh-debian's part with
# the network, after which `up` needs none). A release already up has both in place.
rr_install() {
  local clone; clone=$(rr_repo)
  if rr_attached; then
    rr_log "release $RR_RELEASE is up (from $(rr_attached_clone)): its root and venv are in place"
    return 0
  fi
  rr_build_root
  rr_copy_host_files
  rr_mount_system
  rr_bind "$clone" "$clone"
  mkdir -p "$RR_VENV"
  rr_bind "$RR_VENV" "$RR_VENV"
  rr_venv "$clone"
  rr_detach
  rr_log "release $RR_RELEASE installed: root $RR_ROOT, venv $RR_VENV (nothing started)"
}

rr_down() {
  if [ -e "$RR_NETNS_FILE" ] && rr_attached; then rr_cluster down || true; fi
  rr_detach
  rr_log "release $RR_RELEASE down"
}

# rr_exec [--user U] -- CMD...: CMD as on the cluster's login host
rr_exec() {
  local user=${SUDO_USER:-root} clone cwd uid gid groups home envs=() name runtime
  [ "${1:-}" = --user ] && { user=$2; shift 2; }
  # through sudo (the rule of scripts/run-tests) only as the caller: never root or others
  if [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ] && [ "$user" != "$SUDO_USER" ]; then
    rr_die "exec through sudo runs as $SUDO_USER only, not '$user'"
  fi
  [ "${1:-}" = -- ] && shift
  [ $# -gt 0 ] || rr_die "usage: scripts/slurm-cluster --release R exec [--user U] -- CMD..."
  id "$user" >/dev/null 2>&1 || rr_die "exec: no user '$user' on this machine"
  rr_attached || rr_die "release $RR_RELEASE is not up: scripts/slurm-cluster --release $RR_RELEASE up"
  clone=$(rr_repo); cwd=$(pwd)
  uid=$(id -u "$user"); gid=$(id -g "$user"); groups=$(id -G "$user" | tr ' ' ,)
  home=$(getent passwd "$user" | cut -d: -f6)
  # The user's Jupyter runtime folder holds the queue and accounting caches, named by user
  # and cluster. This machine's cluster and every release's are all named "lab" and share
  # one /home (no real site has two clusters of one name on one home): without a folder of
  # its own per release, a release's kernel read another cluster's squeue and sacct answers
  # (its job 408 "gone from the queue", ENDED, while it was TIMEOUT here).
  runtime=$home/.local/share/jupyter/runtime-release-$RR_RELEASE
  # (made in the home as this machine has it: the login host sees that one)
  setpriv --reuid="$uid" --regid="$gid" --clear-groups -- mkdir -p -m 700 "$runtime" \
    || rr_die "exec: cannot make $runtime as $user"
  envs=(HOME="$home" USER="$user" LOGNAME="$user" SHELL=/bin/bash LANG="${LANG:-C.UTF-8}"
        TERM="${TERM:-dumb}" PATH="$RR_VENV/bin:/usr/local/bin:/usr/bin:/bin" VIRTUAL_ENV="$RR_VENV"
        HPC_MAGICS_RELEASE="$RR_RELEASE" JUPYTER_RUNTIME_DIR="$runtime")
  while IFS= read -r name; do envs+=("$name=${!name}"); done \
    < <(compgen -e | grep -E '^(HPC_MAGICS_|PYTEST_ADDOPTS$|CI$|PYTHONPYCACHEPREFIX$)' | grep -vx 'HPC_MAGICS_RELEASE' || true)
  # The login host: own hostname and /tmp; the caller's home and current folder at the
  # same paths (the clone and /home are already there for every host)
  nsenter --net="$RR_NETNS_FILE" -- unshare --uts --mount --propagation private -- /bin/bash -c '
    set -e
    root=$1 home=$2 cwd=$3 uid=$4 gid=$5 groups=$6 clone=$7; shift 7
    hostname login
    mount --bind "$root/var/lib/hpcm-hosts/login/tmp" "$root/tmp"
    for d in "$home" "$cwd" "$clone"; do
      [ -d "$d" ] && [ "$d" != / ] || continue
      # already there (under /home or the clone)
      [ "$(stat -c %d:%i "$d")" = "$(stat -c %d:%i "$root$d" 2>/dev/null)" ] && continue
      mkdir -p "$root$d"; mount --bind "$d" "$root$d"
    done
    exec chroot "$root" setpriv --reuid="$uid" --regid="$gid" --groups="$groups" -- \
      /bin/sh -c "cd \"\$0\" 2>/dev/null || cd \"\$HOME\"; exec \"\$@\"" "$cwd" "$@"
  ' sh "$RR_ROOT" "$home" "$cwd" "$uid" "$gid" "$groups" "$clone" env -i "${envs[@]}" "$@"
}

rr_main() {
  local r=${1:-}; shift || true
  rr_select "$r"
  local cmd=${1:-}; shift || true
  case "$cmd" in
    up|down|reset|install|exec|status|stop-daemon|start-daemon|kill-node|test-assoc)
      [ "$(id -u)" = 0 ] || rr_die "run as root: --release clusters live in a chroot and namespaces" ;;&
    up|down|reset|install)   # one at a time per release (building a root takes minutes)
      mkdir -p "$RR_CACHE"; exec 8>"$RR_CACHE/lock-$RR_RELEASE"
      flock -w 900 8 || rr_die "another scripts/slurm-cluster --release $RR_RELEASE is still running" ;;&
    status) if rr_attached && [ -e "$RR_NETNS_FILE" ]; then rr_cluster status; else echo "cluster: DOWN (release $RR_RELEASE not attached: scripts/slurm-cluster --release $RR_RELEASE up)"; return 1; fi ;;
    up) rr_up ;;
    down) rr_down ;;
    install) rr_install ;;
    reset) rr_up; rr_cluster reset ;;
    exec) rr_exec "$@" ;;
    stop-daemon|start-daemon|kill-node|test-assoc) rr_cluster "$cmd" "$@" ;;
    *) rr_die "usage: scripts/slurm-cluster --release ${RR_RELEASES// /|} up|down|status|reset|install|exec [--user U] -- CMD..." ;;
  esac
}
