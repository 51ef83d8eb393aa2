"""``hpc-magics profiles [NAME] [--draft [-o FILE]] [--markdown]``: list, show, or draft a
profile, or print every profile's source and date as the table in docs/profiles.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.errors import InvalidRequest, SubmissionError
from ..core.profiles import available_profiles, load_profile
from ..core.units import format_memory, format_time


def add_parser(subcommands: Any) -> None:
    parser = subcommands.add_parser(
        "profiles", help="list or show cluster profiles; --draft one for this cluster",
        description="Without a name: every profile and where it comes from. With a name: its "
                    "partitions and limits. --draft: a profile for the cluster this runs on, "
                    "from scontrol show partition and sinfo.")
    parser.add_argument("name", nargs="?", help="profile to show")
    parser.add_argument("--draft", action="store_true",
                        help="write a profile TOML for this cluster (stdout, or -o FILE)")
    parser.add_argument("-o", "--output", metavar="FILE", help="file for --draft")
    parser.add_argument("--markdown", action="store_true",
                        help="every profile as a Markdown table: system, status, source, date "
                             "(the table in docs/profiles.md)")
    parser.set_defaults(run=run)


def markdown_table() -> str:
    """Every profile: what it describes, current or retired (and its successor), where its
    facts come from and when they were read there."""
    rows = ["| profile | system | status | documentation | read on |", "|---|---|---|---|---|"]
    names = sorted(available_profiles())
    sites = {load_profile(name).extends for name in names}
    for name in names:
        profile = load_profile(name)
        status = (f"retired: use `{profile.successor}`" if profile.retired
                  else "site: what its clusters share" if name in sites
                  else f"current (site: `{profile.extends}`)" if profile.extends else "current")
        cells = [f"`{name}`", profile.description, status, profile.documentation,
                 profile.documented_on]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def _show(name: str) -> str:
    profile = load_profile(name)
    text = [f"{profile.name}: {profile.description}", f"  file: {profile.source}"]
    if profile.documentation:
        text.append(f"  documented: {profile.documentation} (read {profile.documented_on})")
    if profile.retired:
        text.append(f"  RETIRED: {profile.retired}")
    if profile.extends:
        text.append(f"  site: {profile.extends} (accounts and spellings come from there)")
    if profile.default_partition:
        text.append(f"  default partition: {profile.default_partition}")
    text.append(f"  billing: {profile.billing}")
    for part in profile.partitions.values():
        limits = [f"max {format_time(part.max_time_s)}" if part.max_time_s else "",
                  f"{part.max_nodes} nodes" if part.max_nodes else "",
                  f"{part.cpus_per_node} cpus" if part.cpus_per_node else "",
                  format_memory(part.mem_per_node_mb) if part.mem_per_node_mb else "",
                  f"{part.gpus_per_node}x {'/'.join(part.gpu_types) or 'GPU'}"
                  if part.gpus_per_node else "",
                  " or ".join(map(str, part.gpu_counts)) + " GPUs a node only"
                  if part.gpu_counts else "",
                  f"--qos={part.requires_qos}" if part.requires_qos else "",
                  "whole nodes" if part.whole_node else ""]
        text.append(f"  {part.name:<24} " + ", ".join(x for x in limits if x))
    return "\n".join(text)


def run(args: argparse.Namespace) -> int:
    if args.draft:
        from ..scheduler.draft import draft_profile

        try:
            text = draft_profile()
        except SubmissionError as error:  # no Slurm here: a problem, not a usage error
            print(f"hpc-magics profiles: {error}", file=sys.stderr)
            return 1
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
            print(f"wrote {args.output}: review it, then put it in "
                  "/etc/hpc_magics/profiles or ~/.config/hpc_magics/profiles")
        else:
            print(text, end="")
        return 0
    if args.markdown:
        print(markdown_table(), end="")
        return 0
    if args.name:
        print(_show(args.name))
        return 0
    for name, path in sorted(available_profiles().items()):
        try:
            said = load_profile(name).description
        except InvalidRequest as error:  # one bad file (or one others could write) of many
            said = f"not usable: {error}"
        print(f"{name:<10} {said}  [{path}]")
    return 0
