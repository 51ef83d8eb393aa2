"""The two phases of scripts/record-slurm-output: live jobs (queue, pending reasons, one-line
records, usage so far), then jobs run to their end (accounting, segments).

Facts come from the recorder's own plain squeue/sacct questions (``%T``, ``%K``, ``%r``,
``State``), never from the parsers they are to check.
"""

from __future__ import annotations

import re
from typing import Any

FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "DEADLINE", "OUT_OF_MEMORY",
         "NODE_FAIL", "PREEMPTED", "BOOT_FAIL"}


def _sacct_facts(jobs: Any, keys: list[str]) -> dict[str, dict]:
    """Each -X record of the jobs: state (first word: "CANCELLED by 0") and GPUs."""
    ids = ",".join(jobs.ids[k] for k in keys)
    found = {}
    for line in jobs.plain(["sacct", "-n", "-X", "-P", "-j", ids,
                            "-o", "JobID,State,AllocTRES,JobName"]).splitlines():
        job_id, state, tres, name = line.split("|", 3)
        gpus = re.search(r"gres/gpu=(\d+)", tres)
        found[job_id] = {"state": state.split()[0], "gpus": int(gpus.group(1)) if gpus else 0,
                         "name": name}
    return found


def _tasks(jobs: Any, key: str, state: str) -> list[int]:
    numbers: set[int] = set()
    for text in jobs.plain(["squeue", "-h", "-r", "-j", jobs.ids[key], "-t", state,
                            "-o", "%K"]).split():
        numbers.add(int(text))
    return sorted(numbers)


def live_phase(recorder: Any, jobs: Any, specs: dict[str, dict], facts: dict) -> set[str]:
    for key, spec in specs.items():
        jobs.submit(key, spec, recorder if spec.get("record_sbatch") else None)
    running = ["run", "het", "pause", "special"]
    jobs.wait("the live jobs to start", lambda: all(
        jobs.squeue_states(k) and set(jobs.squeue_states(k)) == {"RUNNING"} for k in running)
        and jobs.squeue_states("array").count("RUNNING") == 2)
    jobs.plain(["scancel", "--signal=STOP", jobs.ids["pause"]])
    jobs.plain(["scontrol", "requeuehold", "State=SpecialExit", jobs.ids["special"]])
    jobs.wait("STOPPED and SPECIAL_EXIT", lambda: jobs.squeue_states("pause") == ["STOPPED"]
              and jobs.squeue_states("special") == ["SPECIAL_EXIT"], 30)
    ids, user, cluster = jobs.ids, recorder.manifest["user"], recorder.manifest["cluster"]
    queue: dict[str, dict] = {}
    for key in specs:
        states = set(jobs.squeue_states(key)) or {"MISSING"}
        # %r and %N: the reason and the nodes, each on its own (the product reads %R)
        reason, nodes = (jobs.plain(["squeue", "-h", "-j", ids[key], "-o", "%r|%N"])
                         + "|").split("\n")[0].split("|")[:2]
        queue[ids[key]] = {"state": "RUNNING" if "RUNNING" in states else min(states),
                           "name": specs[key]["name"], "partition": facts["default_partition"],
                           "reason": "" if reason.strip() == "None" else reason.strip(),
                           "node_list": nodes.strip()}
    queue[ids["array"]].update(tasks_running=_tasks(jobs, "array", "RUNNING"),
                               tasks_pending=_tasks(jobs, "array", "PENDING"))
    queue[ids["het"]]["het_components"] = [0, 1]
    scratch = jobs.work
    recorder.case("squeue-user", "queue", {"user": user, "cluster": cluster},
                  {"jobs": queue}, scratch)
    for key in ("run", "held"):  # a running job answers squeue; a held one needs scontrol
        recorder.case(f"own-job-{key}", "own_job", {"job_id": ids[key]},
                      {"name": specs[key]["name"], "partition": facts["default_partition"],
                       "nodes": 1}, scratch)
    log = str(jobs.work / specs["run"]["output"]).replace("%j", ids["run"])
    one_line = {"run": {"JobName": "rec-run a b", "Comment": "a b c", "StdOut": log,
                        "JobState": "RUNNING"},
                "het": {"JobName": "rec-het", "JobState": "RUNNING"},
                "array": {"JobName": "rec-array"},
                "held": {"JobName": "rec-held", "JobState": "PENDING",
                         "Reason": queue[ids["held"]]["reason"]}}
    for key, fields in one_line.items():
        records = jobs.plain(["scontrol", "show", "job", ids[key]]).split("\n\n")
        lines = len([record for record in records if record.strip()])
        recorder.case(f"scontrol-show-job-{key}", "scontrol_job", {"job_id": ids[key]},
                      {"fields": fields, "lines_at_least": lines}, scratch)
    recorder.case("sacct-usage-live", "usage", {"job_ids": [ids[k] for k in specs]},
                  {"records": _sacct_facts(jobs, list(specs))}, scratch)
    states = {entry["state"] for entry in queue.values()}
    # SUSPENDED: an operator's scontrol suspend (the recorder as root)
    jobs.plain(["scancel", "--signal=CONT", ids["pause"]])
    suspended = jobs.run(["scontrol", "suspend", ids["pause"]]).ok and jobs.wait(
        "SUSPENDED", lambda: jobs.squeue_states("pause") == ["SUSPENDED"], 20)
    if suspended:
        recorder.case("squeue-user-suspended", "queue", {"user": user, "cluster": cluster},
                      {"jobs": {ids["pause"]: {"state": "SUSPENDED", "name": "rec-pause"}}},
                      scratch)
        states.add("SUSPENDED")
    return states


def final_phase(recorder: Any, jobs: Any, specs: dict[str, dict],
                live: dict[str, dict]) -> set[str]:
    for key, spec in specs.items():
        jobs.submit(key, spec)
    for key, why in jobs.refused.items():
        recorder.manifest.setdefault("not_reached", {})[key] = \
            f"made for {specs[key]['want']}, sbatch refused it: {why}"
    specs = {key: spec for key, spec in specs.items() if key in jobs.ids}
    if jobs.wait("the job to requeue to start",
                 lambda: jobs.squeue_states("requeue") == ["RUNNING"], 60):
        jobs.plain(["scontrol", "requeue", jobs.ids["requeue"]])
    everyone = list(live) + list(specs)
    jobs.wait("every job's end in accounting", lambda: all(
        jobs.sacct_state(k) in FINAL for k in everyone)
        and not any(jobs.squeue_states(k) for k in specs), 240)  # nor COMPLETING
    ids, user = jobs.ids, recorder.manifest["user"]
    scratch = jobs.work
    records = _sacct_facts(jobs, everyone)
    recorder.case("sacct-usage-final", "usage", {"job_ids": [ids[k] for k in everyone]},
                  {"records": records}, scratch)
    # the user's day as sacct lists it: a job held until its end is not listed (it was
    # never eligible within the window)
    listed = set(jobs.plain(["sacct", "-n", "-X", "-P", "-u", user, "-S", "now-1days",
                             "-o", "JobID"]).split())
    recorder.case("sacct-recent", "recent", {"user": user},
                  {"records_include": {ids[k]: records[ids[k]] for k in specs
                                       if ids[k] in listed}}, scratch)
    segments = [line.split()[0] for line in jobs.plain(
        ["sacct", "-n", "-X", "-P", "-D", "-j", ids["requeue"], "-o", "State"]).splitlines()]
    recorder.case("sacct-segments", "segments", {"job_id": ids["requeue"]},
                  {"states": segments}, scratch)
    for key in [k for k in ("completed", "failed", "timeout") if k in specs]:
        recorder.case(f"scontrol-show-job-{key}", "scontrol_job", {"job_id": ids[key]},
                      {"fields": {"JobName": specs[key]["name"],
                                  "JobState": records[ids[key]]["state"]},
                       "lines_at_least": 1}, scratch)
    states = {r["state"] for r in records.values()}
    if "REQUEUED" in segments:
        states.add("REQUEUED")
    for key, spec in specs.items():
        got = records[ids[key]]["state"]
        if got != spec["want"]:
            recorder.manifest.setdefault("not_reached", {})[key] = \
                f"made for {spec['want']}, ended {got}"
    return states
