# scripts/lib/release-node.sh - scripts/slurm-cluster inside a --release root (sourced by it
# in a root marked by /etc/hpc-magics-release, which scripts/lib/release-root.sh writes).
# Redefines the script's hooks so that the cluster looks like a real site's:
#  - hosts apart: each slurmd runs in its own UTS namespace (hostname c1, c2), PID namespace
#    and mount namespace (own /tmp and node-local scratch /localscratch, under $HOSTS_DIR) and
#    listens on its own loopback address 127.0.0.1K; the controller's daemons run on
#    host "ctl", `exec` on host "login". All of them share one network namespace (no veth
#    interfaces can be made on these machines), the root's /run, /home and the clone.
#  - cgroups: jobs are confined (memory, devices, cores, processes) through cgroup v1.
#  - node-local scratch: $SLURM_TMPDIR per job on each node (Prolog, TaskProlog, Epilog).

HOSTS_DIR=/var/lib/hpcm-hosts
# the hosts' addresses; NodeAddr makes slurmctld reach each slurmd on its own address
HOSTS_TABLE="127.0.0.1 ctl
127.0.0.2 login
127.0.0.11 c1
127.0.0.12 c2"

node_address() { echo "NodeHostname=$1 NodeAddr=127.0.0.$((10 + $2))"; }

# Distinct device numbers per fake GPU, so that ConstrainDevices can tell them apart
# (cgroup v1 allows or denies by major:minor): /dev/full and /dev/random, which no job of
# the suite opens. The host's cluster uses /dev/null's numbers for all of them.
fake_gpu_device() { case "$1" in 0) echo "1 7" ;; 1) echo "1 8" ;; *) echo "1 $((20 + $1))" ;; esac; }

extra_mariadb_conf() {
  # One socket, pid file and data folder in every root: Debian unstable's MariaDB would use
  # /run/mariadbd and /var/lib/mariadb, the older ones /run/mysqld and /var/lib/mysql (the
  # script's paths). Unstable's slurmdbd looks in /run/mariadbd: a link (prepare_host).
  printf '%s\n' "socket = /run/mysqld/mysqld.sock" "pid-file = /run/mysqld/mysqld.pid" \
    "datadir = /var/lib/mysql" "[client]" "socket = /run/mysqld/mysqld.sock"
}

# Why the database is made here and not by slurmdbd: slurmdbd connects with the database
# name; when it does not exist yet (first start) the connect fails with ER_BAD_DB_ERROR and
# slurmdbd creates it and calls mysql_real_connect again on the same MYSQL handle. MariaDB

prepare_release_hosts() {
  local h line
  while read -r line; do
    grep -qE "^${line%% *}[[:space:]]+${line#* }\$" /etc/hosts || echo "$line" >>/etc/hosts
  done <<<"$HOSTS_TABLE"
  for h in login "${NODES[@]}"; do
    install -d -m 1777 "$HOSTS_DIR/$h/tmp"
    install -d -m 1777 "$HOSTS_DIR/$h/localscratch"
  done
}

# ------------------------------------------------------------------------- cgroups
# These machines mount cgroup v1 controllers under /sys/fs/cgroup (the root sees them
# through its /sys). Slurm's cgroup/v1 plugin puts a node's jobs under
# <controller>/slurm_<node>, the same name for c1 of every release: each node gets a
# subtree of its own per controller (hpcm-RRRR-<node>), bound at the controller's place in
# its mount namespace, as a host of its own has its own hierarchy.
CGROUP_CONTROLLERS="memory devices freezer cpuset cpuacct pids"

containment_conf() {
  printf '%s\n' "# cgroups confine jobs (cgroup.conf): memory, devices, cores; processes tracked by cgroup" \
    ProctrackType=proctrack/cgroup TaskPlugin=task/cgroup
}

cgroup_conf() {
  cat <<EOF
# written by scripts/slurm-cluster (hpc_magics test cluster, --release) - edits are overwritten
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
# the job's cpuset holds the CPUs it was given; the nodes claim 4 CPUs on a 2-core machine
# (config_overrides): slurmd takes the ids it lacks modulo the 2 it has (xcpuinfo_abs_to_mac)
ConstrainCores=yes
ConstrainRAMSpace=yes
AllowedRAMSpace=100
ConstrainSwapSpace=no
ConstrainDevices=yes
EOF
}

# ------------------------------------------------------------------ fault drills
# The drills (tests/drills, on the login host through `exec`) stop and start daemons with
# `sudo scripts/slurm-cluster stop-daemon|start-daemon|kill-node` in the login host's
# namespaces (the root's /run, pid files and this machine's process numbering are the
# same there). A daemon started from a host other than "ctl" starts on "ctl" all the same,
# as the controller's host would start it: slurmctld accepts only SlurmctldHost's name,
# and the login host's /tmp is not the controller's (a node's slurmd makes its own host
# inside, start_slurmd).
eval "host_$(declare -f spawn)"
spawn() {
  local logfile=$1; shift
  if [ "$(hostname)" = ctl ]; then host_spawn "$logfile" "$@"; return; fi
  host_spawn "$logfile" unshare --uts --mount --propagation private -- /bin/sh -c \
    'hostname ctl; if mountpoint -q /tmp; then umount -l /tmp; fi; exec "$@"' sh "$@"
}

eval "host_$(declare -f write_configs)"
write_configs() {
  local changed=1
  host_write_configs && changed=0
  cgroup_conf | write_if_changed /etc/slurm/cgroup.conf 644 root:root && changed=0
  # the scripts are read at each job: a change needs no restart
  scratch_script prolog | write_if_changed "$SCRATCH_PROLOG" 755 root:root || true
  scratch_script epilog | write_if_changed "$SCRATCH_EPILOG" 755 root:root || true
  scratch_script task-prolog | write_if_changed "$SCRATCH_TASK_PROLOG" 755 root:root || true
  return $changed
}

# node_cgroups NODE: its subtrees exist (a new cpuset has no CPUs or memory nodes: copy them)
node_cgroups() {
  local c d
  for c in $CGROUP_CONTROLLERS; do
    [ -d "/sys/fs/cgroup/$c" ] || continue
    d=/sys/fs/cgroup/$c/hpcm-${HPCM_RELEASE//./}-$1
    mkdir -p "$d"
    if [ "$c" = cpuset ]; then
      [ -n "$(cat "$d/cpuset.cpus")" ] || cat /sys/fs/cgroup/cpuset/cpuset.cpus >"$d/cpuset.cpus"
      [ -n "$(cat "$d/cpuset.mems")" ] || cat /sys/fs/cgroup/cpuset/cpuset.mems >"$d/cpuset.mems"
    fi
  done
}

# start_slurmd NODE: slurmd on a host of its own (UTS, mount and PID namespace): own
# hostname, /tmp, /localscratch, cgroup subtrees and view of processes. A shell is the
# node's PID 1: it reaps the job steps' orphans while slurmd runs, and keeps the node (and
# its running steps) when slurmd alone is stopped, as on a real node, until they end.
start_slurmd() {
  local pid i
  prepare_release_hosts
  node_cgroups "$1"
  spawn "/var/log/slurm/slurmd-$1.out" unshare --uts --mount --pid --fork --propagation private -- \
    /bin/sh -c 'set -e; hostname "$1"; mount -t proc proc /proc
                # a clone under /tmp: bound at its path inside the node'"'"'s own /tmp first,
                # as a project file system mounted there would be
                case $5 in /tmp/*) mkdir -p "$2/$1$5"; mount --bind "$5" "$2/$1$5" ;; esac
                mount --rbind "$2/$1/tmp" /tmp
                mkdir -p /localscratch; mount --bind "$2/$1/localscratch" /localscratch
                for c in $3; do
                  [ -d "/sys/fs/cgroup/$c/$4-$1" ] && mount --bind "/sys/fs/cgroup/$c/$4-$1" "/sys/fs/cgroup/$c"
                done
                set +e
                /usr/sbin/slurmd -D -N "$1" &
                while :; do wait; set -- /proc/[0-9]*; [ $# -gt 1 ] || exit 0; sleep 5; done' \
    sh "$1" "$HOSTS_DIR" "$CGROUP_CONTROLLERS" "hpcm-${HPCM_RELEASE//./}" "$(cat /etc/hpc-magics-clone)"
  # slurmd writes its pid as its node sees it (SlurmdPidFile, below); the script stops and
  # checks daemons by this machine's numbering: write that one where the script looks
  for ((i = 0; i < 100; i++)); do
    for pid in $(pgrep -x slurmd 2>/dev/null); do
      [ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" = "/usr/sbin/slurmd -D -N $1 " ] \
        && same_root "$pid" && { echo "$pid" >"/run/slurm/slurmd-$1.pid"; return 0; }
    done
    sleep 0.05
  done
  die "slurmd $1 did not start" "/var/log/slurm/slurmd-$1.out"
}

# ------------------------------------------------------------ node-local scratch
# $SLURM_TMPDIR as the Alliance's clusters set it: a folder of the job's own on each of its
# nodes, /localscratch/USER.JOBID.0 (each node's /localscratch is its own), made by the
# Prolog (as root, on every node at allocation: PrologFlags=Alloc), exported to every task
# by the TaskProlog (the batch script's too) and removed by the Epilog at the job's end.
SCRATCH_PROLOG=/etc/slurm/hpcm-prolog
SCRATCH_EPILOG=/etc/slurm/hpcm-epilog
SCRATCH_TASK_PROLOG=/etc/slurm/hpcm-task-prolog

node_scratch_conf() {
  printf '%s\n' "# per-job node-local scratch (\$SLURM_TMPDIR), made and removed by the node" \
    "Prolog=$SCRATCH_PROLOG" "Epilog=$SCRATCH_EPILOG" "TaskProlog=$SCRATCH_TASK_PROLOG" \
    PrologFlags=Alloc
}

# scratch_script prolog|epilog|task-prolog: the script (no search path: absolute commands)
scratch_script() {
  printf '%s\n' '#!/bin/sh' "# written by scripts/slurm-cluster (--release): per-job \$SLURM_TMPDIR"
  # shellcheck disable=SC2016
  printf '%s\n' 'case "$SLURM_JOB_ID" in ""|*[!0-9]*) exit 0 ;; esac' \
    'user=${SLURM_JOB_USER:-$(/usr/bin/id -un)}' 'dir=/localscratch/$user.$SLURM_JOB_ID.0'
  case "$1" in
    # a failing Prolog would drain the node: the job then runs without SLURM_TMPDIR
    # (staging falls back to a private folder in /tmp) and the task prolog says nothing
    prolog) echo '/usr/bin/install -d -m 700 -o "$SLURM_JOB_UID" -g "$(/usr/bin/id -g "$SLURM_JOB_UID")" "$dir" || exit 0' ;;
    epilog) echo '/bin/rm -rf --one-file-system -- "$dir"' ;;
    task-prolog) echo '[ -d "$dir" ] && echo "export SLURM_TMPDIR=$dir"' ;;
  esac
  echo 'exit 0'
}

eval "host_$(declare -f slurm_conf)"
slurm_conf() {
  host_slurm_conf "$@" | sed 's|^SlurmdPidFile=.*|SlurmdPidFile=/run/slurm/slurmd-%n.nodepid|' \
    | awk -v extra="$(node_scratch_conf)" '/^NodeName=/ && !done {print extra; done = 1} {print}'
}

# prepare_host, plus the hosts' names and folders; Debian unstable's client library (and
# so its slurmdbd) looks for the server's socket in /run/mariadbd: the same folder
eval "host_$(declare -f prepare_host)"
prepare_host() {
  host_prepare_host
  prepare_release_hosts
  [ -d /run/mariadbd ] && [ ! -L /run/mariadbd ] && rmdir /run/mariadbd 2>/dev/null
  [ -e /run/mariadbd ] || ln -s /run/mysqld /run/mariadbd
}
