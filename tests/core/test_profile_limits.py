"""Each profile's documented limits, from its own data: a request at the limit passes and one
over it is refused naming the option (table-driven, so a new partition is tested for free)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hpc_magics.core.checkscript import ScriptReport, check_script, render
from hpc_magics.core.profiles import PACKAGED_DIR, ClusterProfile, Partition, load_profile
from hpc_magics.core.units import format_memory, format_time

PROFILES = sorted(p.stem for p in PACKAGED_DIR.glob("*.toml") if p.stem != "generic")


def base_lines(profile: ClusterProfile, part: Partition) -> list[str]:
    """A request that fits the partition exactly: its maximum time, one node."""
    lines = [f"#SBATCH --partition={part.name}"]
    if part.max_time_s:
        lines.append(f"#SBATCH --time={format_time(part.max_time_s)}")
    if part.requires_qos:
        lines.append(f"#SBATCH --qos={part.requires_qos}")
    if profile.account_example:
        lines.append(f"#SBATCH --account={profile.account_example}")
    if profile.gpu_constraint_for_cpu_only:
        lines.append(f"#SBATCH --constraint={profile.gpu_constraint_for_cpu_only}")
    return lines


def over_limits(profile: ClusterProfile, part: Partition) -> Iterator[tuple[str, str, str]]:
    """(what, the extra #SBATCH line, the option the checker must name)."""
    if part.max_time_s:
        yield "time", f"#SBATCH --time={format_time(part.max_time_s + 60)}", "time"
    if part.max_nodes:
        yield "nodes", f"#SBATCH --nodes={part.max_nodes + 1}", "nodes"
    if part.cpus_per_node:
        yield "cpus", f"#SBATCH --cpus-per-task={part.cpus_per_node + 1}", "cpus-per-task"
    if part.mem_per_node_mb:
        yield "mem", f"#SBATCH --mem={format_memory(part.mem_per_node_mb + 1)}", "mem"
    flag = "gres=gpu:" if profile.gpu_flag == "gres" else "gpus-per-node="
    option = "gres" if profile.gpu_flag == "gres" else "gpus-per-node"
    if part.gpus_per_node:
        kind = f"{part.gpu_types[0]}:" if part.gpu_types else ""
        limit = part.gpus_per_type.get(part.gpu_types[0], part.gpus_per_node) \
            if part.gpu_types else part.gpus_per_node
        yield "gpus", f"#SBATCH --{flag}{kind}{limit + 1}", option
        for kind_name, count in part.gpus_per_type.items():
            yield f"gpus-{kind_name}", f"#SBATCH --{flag}{kind_name}:{count + 1}", option
        if part.gpu_types:
            yield "gpu-type", f"#SBATCH --{flag}NOSUCHGPU:1", option
    elif profile.partitions and not profile.gpu_constraint_for_cpu_only:
        yield "no-gpus", f"#SBATCH --{flag}1", option


CASES = [
    pytest.param(name, part_name, what, line, option, id=f"{name}-{part_name}-{what}")
    for name in PROFILES
    for part_name, part in load_profile(name).partitions.items()
    for what, line, option in over_limits(load_profile(name), part)
]


def run(name: str, lines: list[str]) -> ScriptReport:
    return check_script("#!/bin/bash\n" + "\n".join(lines) + "\nhostname\n", load_profile(name))


@pytest.mark.parametrize("name", PROFILES)
def test_every_partition_accepts_a_job_at_its_limits(name: str) -> None:
    profile = load_profile(name)
    assert profile.documentation and profile.documented_on, f"{name}: where the limits come from"
    for part in profile.partitions.values():
        report = run(name, base_lines(profile, part))
        assert report.ok, render(report, f"{name}/{part.name}")


@pytest.mark.parametrize(("name", "part_name", "what", "line", "option"), CASES)
def test_one_over_limit_request_per_documented_limit_is_refused(
        name: str, part_name: str, what: str, line: str, option: str) -> None:
    profile = load_profile(name)
    report = run(name, [*base_lines(profile, profile.partitions[part_name]), line])
    assert option in {f.field for f in report.errors}, render(report, f"{name}/{part_name}")


@pytest.mark.parametrize("name", PROFILES)
def test_required_qos_and_unknown_partitions(name: str) -> None:
    profile = load_profile(name)
    for part in profile.partitions.values():
        if part.requires_qos:
            lines = [x for x in base_lines(profile, part) if "--qos" not in x]
            assert "qos" in {f.field for f in run(name, lines).errors}
    report = run(name, ["#SBATCH --partition=nosuchpartition", "#SBATCH --time=10"])
    named = {f.field: f.severity for f in report.findings}
    if not profile.partitions:  # a site's or a retired cluster's profile names none
        assert "partition" not in named
    else:
        assert named.get("partition") == ("error" if profile.partitions_complete else "warning")


def test_site_defaults_are_warnings_not_errors() -> None:
    # the account the site fills in, the partition's default time: never refused
    narval = run("narval", ["#SBATCH --gpus-per-node=a100:1", "#SBATCH --time=3:00:00"])
    assert narval.ok and any(f.field == "account" for f in narval.findings)
    sdumont = run("sdumont", ["#SBATCH -p sequana_cpu", "#SBATCH -N 2"])
    assert sdumont.ok and any(f.field == "time" for f in sdumont.findings)
    m3 = run("m3", ["#SBATCH --partition=genomics", "#SBATCH --account=ml20"])
    assert m3.ok  # M3's partition list is not complete: a warning
