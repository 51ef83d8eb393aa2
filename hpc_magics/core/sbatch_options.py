"""Every option sbatch(1) accepts (Slurm 24.05), as data: how it takes a value and what the
value must look like.  ``core/flags.py`` holds the few hpc_magics models; the checker
(``core/checkscript.py``) uses this table to tell a typo from an option it merely passes on.
"""

from __future__ import annotations

from dataclasses import dataclass

REQUIRED, OPTIONAL, NONE = "required", "optional", "none"


@dataclass(frozen=True)
class SbatchOption:
    name: str
    short: str | None = None
    value: str = REQUIRED  # REQUIRED, OPTIONAL (only as --opt=value) or NONE
    kind: str = "text"  # how the value is checked: see checkscript.VALUE_CHECKS


def _o(name: str, short: str | None = None, value: str = REQUIRED, kind: str = "text"
       ) -> SbatchOption:
    return SbatchOption(name, short, value, kind)


OPTIONS: tuple[SbatchOption, ...] = (
    _o("account", "A"), _o("acctg-freq"), _o("array", "a", kind="array"), _o("batch"),
    _o("bb"), _o("bbf"), _o("begin", "b"), _o("chdir", "D"), _o("cluster-constraint"),
    _o("clusters", "M"), _o("comment"), _o("constraint", "C"), _o("container"),
    _o("container-id"), _o("contiguous", value=NONE), _o("core-spec", "S", kind="count0"),
    _o("cores-per-socket", kind="count"), _o("cpu-freq"), _o("cpus-per-gpu", kind="count"),
    _o("cpus-per-task", "c", kind="count"), _o("deadline"), _o("delay-boot"),
    _o("dependency", "d", kind="dependency"), _o("distribution", "m"),
    _o("error", "e", kind="filename"), _o("exclude", "x"), _o("exclusive", value=OPTIONAL),
    _o("export"), _o("export-file"), _o("extra"), _o("extra-node-info", "B"),
    _o("get-user-env", value=OPTIONAL), _o("gid"), _o("gpu-bind"), _o("gpu-freq"),
    _o("gpus", "G", kind="gpus"), _o("gpus-per-node", kind="gpus"),
    _o("gpus-per-socket", kind="gpus"), _o("gpus-per-task", kind="gpus"),
    _o("gres", kind="gres"), _o("gres-flags"), _o("help", "h", value=NONE), _o("hint"),
    _o("hold", "H", value=NONE), _o("ignore-pbs", value=NONE), _o("input", "i"),
    _o("job-name", "J"), _o("kill-on-invalid-dep"), _o("licenses", "L"),
    _o("mail-type", kind="mail-type"), _o("mail-user"), _o("mcs-label"),
    _o("mem", kind="memory"), _o("mem-bind"), _o("mem-per-cpu", kind="memory"),
    _o("mem-per-gpu", kind="memory"), _o("mincpus", kind="count"), _o("network"),
    _o("nice", value=OPTIONAL), _o("no-kill", "k", value=OPTIONAL),
    _o("no-requeue", value=NONE), _o("nodefile", "F"), _o("nodelist", "w"),
    _o("nodes", "N", kind="nodes"), _o("ntasks", "n", kind="count"),
    _o("ntasks-per-core", kind="count"), _o("ntasks-per-gpu", kind="count"),
    _o("ntasks-per-node", kind="count"), _o("ntasks-per-socket", kind="count"),
    _o("open-mode", kind="open-mode"), _o("output", "o", kind="filename"),
    _o("overcommit", "O", value=NONE), _o("oversubscribe", "s", value=NONE),
    _o("parsable", value=NONE), _o("partition", "p"), _o("power"), _o("prefer"),
    _o("priority"), _o("profile"), _o("propagate", value=OPTIONAL), _o("qos", "q"),
    _o("quiet", "Q", value=NONE), _o("reboot", value=NONE), _o("requeue", value=NONE),
    _o("reservation"), _o("resv-ports", value=OPTIONAL), _o("segment"), _o("signal"),
    _o("sockets-per-node", kind="count"), _o("spread-job", value=NONE), _o("switches"),
    _o("test-only", value=NONE), _o("thread-spec", kind="count"),
    _o("threads-per-core", kind="count"), _o("time", "t", kind="time"),
    _o("time-min", kind="time"), _o("tmp", kind="memory"), _o("tres-bind"),
    _o("tres-per-task"), _o("uid"), _o("usage", "u", value=NONE),
    _o("use-min-nodes", value=NONE), _o("verbose", "v", value=NONE),
    _o("version", "V", value=NONE), _o("wait", "W", value=NONE), _o("wait-all-nodes"),
    _o("wckey"), _o("wrap"),
)

BY_NAME: dict[str, SbatchOption] = {option.name: option for option in OPTIONS}
BY_SHORT: dict[str, SbatchOption] = {o.short: o for o in OPTIONS if o.short}

# Spellings sbatch still takes for an option that has another name now.
ALIASES: dict[str, str] = {"tasks-per-node": "ntasks-per-node", "share": "oversubscribe",
                           "workdir": "chdir"}

# Options the pyxis container plugin adds to sbatch and srun where a site installs it (CSCS
# Alps, many GPU clusters; NVIDIA/pyxis wiki, Usage): not --container with a glued value.
PLUGIN_OPTIONS: dict[str, str] = {name: "pyxis" for name in (
    "container-image", "container-mounts", "container-workdir", "container-name",
    "container-save", "container-mount-home", "no-container-mount-home",
    "container-remap-root", "no-container-remap-root", "container-entrypoint",
    "no-container-entrypoint", "container-entrypoint-log", "container-writable",
    "container-readonly", "container-env")}


def lookup(spelling: str) -> SbatchOption | None:
    """The option a long spelling means: exact, an alias, or (as getopt_long does) the one
    option it is an unambiguous beginning of."""
    if spelling in BY_NAME:
        return BY_NAME[spelling]
    if spelling in ALIASES:
        return BY_NAME[ALIASES[spelling]]
    matches = [o for o in OPTIONS if o.name.startswith(spelling)]
    return matches[0] if len(matches) == 1 else None


def ambiguous(spelling: str) -> list[str]:
    """The options a long spelling could be the beginning of, when it is more than one."""
    matches = [o.name for o in OPTIONS if o.name.startswith(spelling)]
    return matches if len(matches) > 1 and spelling not in BY_NAME else []
