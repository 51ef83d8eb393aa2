"""What scripts/record-slurm-output submits: its jobs as data, and the states it cannot make.

Every job is named rec-*, asks one CPU and little memory, and is cancelled at the end.
"""

from __future__ import annotations

import gzip
import re
import shlex
from pathlib import Path

# Alive while the product's calls are recorded, then cancelled (they end CANCELLED).
LIVE_JOBS: dict[str, dict] = {
    # spaces in the name, the comment and the log path; an untyped GPU request
    "run": {"name": "rec-run a b", "comment": "a b c", "gres": "gpu:1",
            "output": "rec out %j.txt", "record_sbatch": True},
    "array": {"name": "rec-array", "array": "0-3%2", "record_sbatch": True},
    "het": {"name": "rec-het", "het": [{}, {"gres": "gpu:v100:1"}], "record_sbatch": True},
    # -M CLUSTER: sbatch --parsable answers "ID;CLUSTER"
    "held": {"name": "rec-held", "hold": True, "clusters": True, "record_sbatch": True},
    "after": {"name": "rec-after", "dependency": "afterok:{run}"},
    "pause": {"name": "rec-pause"},  # stopped (SIGSTOP), then suspended
    "special": {"name": "rec-special"},  # requeued held in SPECIAL_EXIT
}

# Run to their end; "want" is the state they are made for.
FINAL_JOBS: dict[str, dict] = {
    "completed": {"name": "rec-completed", "command": "true", "want": "COMPLETED"},
    "failed": {"name": "rec-failed", "command": "exit 3", "want": "FAILED"},
    "timeout": {"name": "rec-timeout", "time": "1", "want": "TIMEOUT"},
    # its time limit passes its deadline: 22.05 takes it and ends it at once; 24.11 and
    # later refuse it, so then it is sent held, with a limit that soon passes the deadline
    "deadline": {"name": "rec-deadline", "time": "1", "deadline": "now+30", "want": "DEADLINE",
                 "if_refused": {"deadline": "now+62", "hold": True}},
    # 400 MB held by tail in a job given 64 MB: OUT_OF_MEMORY where cgroups confine
    "oom": {"name": "rec-oom", "mem": "64M", "want": "OUT_OF_MEMORY",
            "command": "head -c 400M /dev/zero | tail > /dev/null; sleep 2"},
    # requeued once while running: sacct -D shows a REQUEUED segment, then COMPLETED
    "requeue": {"name": "rec-requeue", "command": "sleep 8", "want": "COMPLETED",
                "requeue": True},
}

MAN_PAGE = Path("/usr/share/man/man1/squeue.1.gz")
_STATE_LINE = re.compile(r"^\\fB[A-Z]{1,3} +([A-Z_]+)\\fR$", re.MULTILINE)


def man_page_states() -> tuple[list[str], str]:
    """The JOB STATE CODES of this release's squeue(1), and where they come from."""
    try:
        text = gzip.decompress(MAN_PAGE.read_bytes()).decode("utf-8", "replace")
    except OSError:
        return STATES_OF_THE_MAN_PAGE, "squeue(1) of 22.05 (no man page here)"
    section = text.partition('.SH "JOB STATE CODES"')[2].partition(".SH ")[0]
    found = _STATE_LINE.findall(section)
    return (found, str(MAN_PAGE)) if found else (STATES_OF_THE_MAN_PAGE, "squeue(1) of 22.05")


# squeue(1) of 22.05, JOB STATE CODES (24.11's and 26.05's list the same ones)
STATES_OF_THE_MAN_PAGE = [
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "CONFIGURING", "COMPLETING", "DEADLINE", "FAILED",
    "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "RUNNING", "RESV_DEL_HOLD",
    "REQUEUE_FED", "REQUEUE_HOLD", "REQUEUED", "RESIZING", "REVOKED", "SIGNALING",
    "SPECIAL_EXIT", "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT"]

# Why a state is missing from a release's recordings when it is.
NOT_ON_DEMAND = {
    "BOOT_FAIL": "needs a node that fails to boot (power saving with a failing ResumeProgram)",
    "NODE_FAIL": "needs a node's slurmd killed: the test cluster is shared, its daemons are "
                 "never stopped by the recorder",
    "PREEMPTED": "the test clusters configure no preemption (PreemptType)",
    "RESV_DEL_HOLD": "needs a reservation deleted under a job: an admin change of the "
                     "shared cluster",
    "REQUEUE_FED": "federation only", "REVOKED": "federation only",
    "RESIZING": "a moment while a job shrinks or grows (scontrol update NumNodes)",
    "SIGNALING": "a moment while a job is signalled",
    "STAGE_OUT": "burst buffers only",
    "CONFIGURING": "a moment while nodes boot for a job",
    "COMPLETING": "a moment after a job's end: not on demand",
    "REQUEUE_HOLD": "a flag, not a listed state: squeue shows a job requeued held as PENDING "
                    "(reason 'job requeued in held state'), sacct -D its segment REQUEUED",
    "OUT_OF_MEMORY": "the job over its --mem was not stopped: no cgroup memory confinement "
                     "(TaskPlugin=task/cgroup, ConstrainRAMSpace) on this cluster",
    "SUSPENDED": "scontrol suspend needs an operator: recorded only when run as root",
    "STOPPED": "scancel --signal=STOP was refused",
    "SPECIAL_EXIT": "scontrol requeuehold State=SpecialExit was refused",
    "DEADLINE": "the job with --deadline was not ended by it",
    "TIMEOUT": "the job over its time limit did not end TIMEOUT within the wait",
    "REQUEUED": "scontrol requeue was refused",
}


def _options(spec: dict, work: Path, cluster: str, ids: dict[str, str]) -> list[str]:
    options = [f"--time={spec.get('time', '5')}", f"--mem={spec.get('mem', '200M')}",
               "--ntasks=1"]
    output = str(work / spec["output"]) if "output" in spec else "/dev/null"
    options += [f"--output={output}", f"--error={output}"]
    for flag in ("gres", "comment", "array", "deadline"):
        if flag in spec:
            options.append(f"--{flag}={spec[flag]}")
    if "dependency" in spec:
        options.append("--dependency=" + spec["dependency"].format(**ids))
    if spec.get("hold"):
        options.append("--hold")
    if spec.get("clusters"):
        options.append(f"--clusters={cluster}")
    return options


def job_script(spec: dict, work: Path, cluster: str, ids: dict[str, str]) -> str:
    """The job's script: its options as #SBATCH lines (quoted: names with spaces), as the
    product's job.sh carries them; a heterogeneous job's components split by hetjob."""
    lines = ["#!/bin/bash", f"#SBATCH --job-name={shlex.quote(spec['name'])}"]
    components = spec.get("het") or [{}]
    for index, component in enumerate(components):
        if index:
            lines.append("#SBATCH hetjob")
        mine = {**spec, **component} if index == 0 else {"name": spec["name"], **component}
        lines += [f"#SBATCH {shlex.quote(option)}"
                  for option in _options(mine, work, cluster, ids)]
    lines.append(spec.get("command", "sleep 600"))
    return "\n".join(lines) + "\n"
