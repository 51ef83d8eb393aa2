"""Cluster profiles: what a site allows and how it spells requests, kept as data.

Profiles are TOML files.  The packaged ones live in ``hpc_magics/profiles``; a site
can add or override them in ``/etc/hpc_magics/profiles`` and a user in
``~/.config/hpc_magics/profiles``; ``HPC_MAGICS_PROFILE_PATH`` (``os.pathsep``
separated) comes first of all. Their shell lines run as the user: a file there is used
only when no one but the user or root could have written it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InvalidRequest
from .units import parse_memory, parse_time

PACKAGED_DIR = Path(__file__).resolve().parent.parent / "profiles"


@dataclass(frozen=True)
class Partition:
    name: str
    max_time_s: int | None = None
    max_nodes: int | None = None
    cpus_per_node: int | None = None
    mem_per_node_mb: int | None = None
    gpus_per_node: int = 0
    gpu_types: tuple[str, ...] = ()
    requires_qos: str | None = None
    whole_node: bool = False
    note: str = ""
    gpus_per_type: Mapping[str, int] = field(default_factory=dict)  # when node types differ
    billing_weights: str = ""  # Slurm's TRESBillingWeights, e.g. "CPU=1.0,Mem=0.25G,GRES/gpu=4"
    # GPU types a site spells many ways (MIG slices: h100_3g.40gb, h100_20gb, ...): a regex
    # of the types it takes besides gpu_types
    gpu_type_pattern: str = ""
    # the only GPU counts per node the site schedules (Trillium: one GPU or a whole node)
    gpu_counts: tuple[int, ...] = ()


@dataclass(frozen=True)
class ClusterProfile:
    name: str
    description: str = ""
    default_partition: str | None = None
    partitions: Mapping[str, Partition] = field(default_factory=dict)
    account_required: bool = False
    account_pattern: str | None = None
    account_example: str = ""
    account_placeholders: tuple[str, ...] = ()
    gpu_type_required: bool = False
    gpu_constraint_for_cpu_only: str | None = None
    gpu_flag: str = "gpus-per-node"  # or "gres"
    time_required: bool = False
    shebang: str = "#!/bin/bash"
    setup: tuple[str, ...] = ()
    defaults: Mapping[str, str] = field(default_factory=dict)
    extra_directives: tuple[tuple[str, str], ...] = ()
    billing: str = "node"  # what a node-hour counts: "node" or "core"
    cluster_names: tuple[str, ...] = ()  # Slurm ClusterName values this profile describes
    source: str = ""
    documentation: str = ""  # where the limits come from
    documented_on: str = ""  # when they were read there
    partitions_complete: bool = True  # False: an unlisted partition is a warning, not an error
    site_options: tuple[str, ...] = ()  # sbatch options the site's plugins add (--uenv)
    legacy_constraints: Mapping[str, str] = field(default_factory=dict)  # -C value → advice
    retired: str = ""  # the system is gone: what to use instead
    successor: str = ""  # the profile of the system that replaced a retired one
    # Placeholder accounts this site's guides print (def-someuser): refused, as regexes
    account_placeholder_patterns: tuple[str, ...] = ()
    # How a script or a host says it is this cluster (regexes, searched case-insensitively)
    script_hints: tuple[str, ...] = ()
    hostnames: tuple[str, ...] = ()
    extends: str = ""  # the profile whose values this one starts from (the site's)
    # the kernel's world in the job (core/kernel_world.py): interpreter, modules, uenv,
    # container = "auto" | "off" | a fixed value
    environment: Mapping[str, Any] = field(default_factory=dict)
    balance_command: tuple[str, ...] = ()  # the site's own allocation balance tool (argv)
    # Slurm kernels (kernel/tunnel.py): tunnel = "tcp" | "ssh", ssh_options = [ssh's own]
    kernel: Mapping[str, Any] = field(default_factory=dict)

    def partition(self, name: str | None) -> Partition | None:
        return self.partitions.get(name or self.default_partition or "")

    def envelope(self) -> Partition | None:
        """The most any partition allows: what a job that names no partition is checked
        against when the site routes jobs itself (no default partition)."""
        if not self.partitions:
            return None
        parts = list(self.partitions.values())

        def most(values: list[int | None]) -> int | None:
            return None if any(v is None for v in values) else max(v for v in values if v)

        types: list[str] = []
        for part in parts:
            types += [t for t in part.gpu_types if t not in types]
        return Partition(
            name="(any partition)",
            max_time_s=most([p.max_time_s for p in parts]),
            max_nodes=most([p.max_nodes for p in parts]),
            cpus_per_node=most([p.cpus_per_node for p in parts]),
            mem_per_node_mb=most([p.mem_per_node_mb for p in parts]),
            gpus_per_node=max(p.gpus_per_node for p in parts),
            gpu_types=tuple(types) if all(p.gpu_types or not p.gpus_per_node for p in parts)
            else (),
            gpu_type_pattern="|".join(f"(?:{p.gpu_type_pattern})" for p in parts
                                      if p.gpu_type_pattern),
        )


def _partition(name: str, data: Mapping[str, Any]) -> Partition:
    return Partition(
        name=name,
        max_time_s=parse_time(data["max_time"]) if "max_time" in data else None,
        max_nodes=data.get("max_nodes"),
        cpus_per_node=data.get("cpus_per_node"),
        mem_per_node_mb=parse_memory(data["mem_per_node"]) if "mem_per_node" in data else None,
        gpus_per_node=int(data.get("gpus_per_node", 0)),
        gpu_types=tuple(data.get("gpu_types", ())),
        requires_qos=data.get("requires_qos"),
        whole_node=bool(data.get("whole_node", False)),
        note=data.get("note", ""),
        gpus_per_type={str(k): int(v) for k, v in data.get("gpus_per_type", {}).items()},
        billing_weights=str(data.get("billing_weights", "")),
        gpu_type_pattern=str(data.get("gpu_type_pattern", "")),
        gpu_counts=tuple(int(n) for n in data.get("gpu_counts", ())),
    )


def profile_from_mapping(name: str, data: Mapping[str, Any], source: str = "") -> ClusterProfile:
    partitions = {
        pname: _partition(pname, pdata) for pname, pdata in data.get("partitions", {}).items()
    }
    return ClusterProfile(
        name=name,
        description=data.get("description", ""),
        default_partition=data.get("default_partition"),
        partitions=partitions,
        account_required=bool(data.get("account_required", False)),
        account_pattern=data.get("account_pattern"),
        account_example=data.get("account_example", ""),
        account_placeholders=tuple(data.get("account_placeholders", ())),
        gpu_type_required=bool(data.get("gpu_type_required", False)),
        gpu_constraint_for_cpu_only=data.get("gpu_constraint_for_cpu_only"),
        gpu_flag=data.get("gpu_flag", "gpus-per-node"),
        time_required=bool(data.get("time_required", False)),
        shebang=data.get("shebang", "#!/bin/bash"),
        setup=tuple(data.get("setup", ())),
        defaults=dict(data.get("defaults", {})),
        extra_directives=tuple((k, str(v)) for k, v in data.get("extra_directives", {}).items()),
        billing=data.get("billing", "node"),
        cluster_names=tuple(data.get("cluster_names", ())),
        source=source,
        documentation=data.get("documentation", ""),
        documented_on=str(data.get("documented_on", "")),
        partitions_complete=bool(data.get("partitions_complete", True)),
        site_options=tuple(data.get("site_options", ())),
        legacy_constraints=dict(data.get("legacy_constraints", {})),
        retired=data.get("retired", ""),
        successor=data.get("successor", ""),
        account_placeholder_patterns=tuple(data.get("account_placeholder_patterns", ())),
        script_hints=tuple(data.get("script_hints", ())),
        hostnames=tuple(data.get("hostnames", ())),
        extends=data.get("extends", ""),
        environment=dict(data.get("environment", {})),
        balance_command=tuple(str(a) for a in data.get("balance_command", ())),
        kernel=dict(data.get("kernel", {})),
    )


def search_path() -> list[Path]:
    """Folders searched for profiles, first match wins."""
    paths = [Path(p) for p in os.environ.get("HPC_MAGICS_PROFILE_PATH", "").split(os.pathsep) if p]
    config_home = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    paths += [config_home / "hpc_magics" / "profiles", Path("/etc/hpc_magics/profiles")]
    paths.append(PACKAGED_DIR)
    return paths


# Every %%sbatch cell looks its profile up: the folders' listings and the parsed files are
# kept while the folder (its mtime: a file added, removed or renamed in) or the file (its
# mtime, size and mode) is unchanged, so editing a profile takes effect at the next cell.
_LISTINGS: dict[Path, tuple[int, tuple[Path, ...]]] = {}
_PARSED: dict[tuple[str, tuple[Any, ...]], ClusterProfile] = {}


def _toml_files(folder: Path) -> tuple[Path, ...]:
    try:
        changed = folder.stat().st_mtime_ns
    except OSError:
        return ()
    known = _LISTINGS.get(folder)
    if known is None or known[0] != changed:
        files = tuple(sorted(folder.glob("*.toml"))) if folder.is_dir() else ()
        known = _LISTINGS[folder] = (changed, files)
    return known[1]


def available_profiles(paths: Iterable[Path] | None = None) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in paths if paths is not None else search_path():
        for file in _toml_files(folder):
            found.setdefault(file.stem, file)
    return found


def load_profile(name: str, paths: Iterable[Path] | None = None) -> ClusterProfile:
    files = available_profiles(paths)
    if name not in files:
        raise InvalidRequest(
            f"profile {name!r} is unknown: use one of {', '.join(sorted(files))}"
        )
    chain = _chain(name, files)
    key = (name, tuple(stamp for _, stamp, _ in chain))
    if key in _PARSED:
        return _PARSED[key]
    merged: dict[str, Any] = {}
    for _, _, data in reversed(chain[1:]):  # the site's values first, the cluster's over them
        merged.update({k: v for k, v in data.items() if k not in _OWN_KEYS})
    merged.update(chain[0][2])
    path = chain[0][0]
    try:
        _check_types(merged)
        profile = profile_from_mapping(name, merged, source=str(path))
    except (InvalidRequest, KeyError, TypeError, ValueError, AttributeError) as error:
        raise InvalidRequest(f"profile file {path}: {error}: fix that value (see the "
                             f"packaged profiles in {PACKAGED_DIR} for examples)") from None
    _PARSED[key] = profile
    return profile


# A profile may say ``extends = "alliance"``: it starts from that profile's values (a
# site's accounts and hints, shared by its clusters) and replaces the keys it sets.
_MAX_EXTENDS = 4
# What names one cluster is never inherited: a site's hints would make every cluster match
_OWN_KEYS = frozenset({"cluster_names", "script_hints", "hostnames", "retired", "successor",
                       "description"})
_RAW: dict[tuple[Any, ...], dict[str, Any]] = {}


_Link = tuple[Path, tuple[Any, ...], dict[str, Any]]


def _chain(name: str, files: Mapping[str, Path]) -> list[_Link]:
    """The profile's file, then the one it extends, and so on: (path, stamp, data)."""
    chain: list[_Link] = []
    current = name
    while True:
        path = files[current]
        stamp, data = _raw(path)
        chain.append((path, stamp, data))
        base = data.get("extends")
        if not base:
            return chain
        if not isinstance(base, str) or base not in files:
            raise InvalidRequest(f"profile file {path}: extends = {base!r} is not a profile: "
                                 f"use one of {', '.join(sorted(files))}")
        if base in {p.stem for p, _, _ in chain} or len(chain) > _MAX_EXTENDS:
            raise InvalidRequest(f"profile file {path}: extends = {base!r} makes a loop: "
                                 "remove it from one of the files")
        current = base


def _raw(path: Path) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """One file's TOML, parsed again only when its mtime, size, mode or owner changed."""
    try:
        stat = path.stat()
    except OSError:
        return (path, None), _read_toml(path)  # reading it says what is wrong
    _refuse_if_others_control(path, stat)
    stamp = (path, stat.st_mtime_ns, stat.st_size, stat.st_mode, stat.st_uid)
    if stamp not in _RAW:
        _RAW[stamp] = _read_toml(path)
    return stamp, _RAW[stamp]


def _controlled_by_others(stat: os.stat_result, folder: bool = False) -> str | None:
    """Who besides this user and root could have written it, or None."""
    if stat.st_uid not in (os.getuid(), 0):
        import pwd

        try:
            owner = pwd.getpwuid(stat.st_uid).pw_name
        except KeyError:
            owner = f"uid {stat.st_uid}"
        return f"owned by {owner}"
    # a sticky folder (/tmp) lets others add files, never replace this user's
    if stat.st_mode & 0o022 and not (folder and stat.st_mode & 0o1000):
        return "writable by others (group or world)"
    return None


def others_could_write(path: Path, stat: os.stat_result | None = None) -> str | None:
    """Why someone besides this user and root could have written ``path`` (the file or its
    folder), as ``"it is owned by bob"``; None when no one could."""
    try:
        why = _controlled_by_others(stat or path.stat())
        if why is not None:
            return f"it is {why}"
        why = _controlled_by_others(path.parent.stat(), folder=True)
    except OSError:
        return None  # reading it says what is wrong
    return f"its folder {path.parent} is {why}" if why is not None else None


def _refuse_if_others_control(path: Path, stat: os.stat_result) -> None:
    """A profile's ``setup``, ``environment``, ``balance_command`` and ``kernel`` become
    commands run as this user: a site or user file (not the package's own) is used only
    when this user or root alone could have written it and its folder."""
    if path.parent.resolve() == PACKAGED_DIR:
        return
    why = others_could_write(path, stat)
    if why is not None:
        raise InvalidRequest(
            f"profile file {path} is not used: {why}, and a profile's setup and commands "
            "run as you: make it yours and not writable by others (chmod go-w), or remove it")


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):  # loaded here, not at import: %load_ext stays cheap
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise InvalidRequest(f"profile file {path} is not valid TOML: {error}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidRequest(f"profile file {path} cannot be read ({error}): fix its "
                             "permissions or remove it") from None


# The types each profile key must have (TOML gives int, float, str, bool, list, dict).
_TOP_LEVEL_TYPES: dict[str, type | tuple[type, ...]] = {
    "description": str, "default_partition": str, "partitions": dict,
    "account_required": bool, "account_pattern": str, "account_example": str,
    "account_placeholders": list, "gpu_type_required": bool,
    "gpu_constraint_for_cpu_only": str, "gpu_flag": str, "time_required": bool,
    "shebang": str, "setup": list, "defaults": dict, "extra_directives": dict,
    "billing": str, "cluster_names": list, "retired": str, "successor": str,
    "account_placeholder_patterns": list, "script_hints": list, "hostnames": list,
    "extends": str, "environment": dict, "balance_command": list, "kernel": dict,
}
_PARTITION_TYPES: dict[str, type | tuple[type, ...]] = {
    "max_time": (str, int), "max_nodes": int, "cpus_per_node": int,
    "mem_per_node": (str, int), "gpus_per_node": int, "gpu_types": list,
    "requires_qos": str, "whole_node": bool, "note": str, "gpu_type_pattern": str,
    "gpu_counts": list,
}
_TYPE_NAMES = {str: "a string", int: "a whole number", bool: "true or false",
               list: "a list", dict: "a table"}


def _check_types(data: Mapping[str, Any]) -> None:
    def check(where: str, table: Mapping[str, Any],
              types: Mapping[str, type | tuple[type, ...]]) -> None:
        for key, wanted in types.items():
            if key not in table:
                continue
            value = table[key]
            allowed = wanted if isinstance(wanted, tuple) else (wanted,)
            # bool is an int to Python, not to a profile
            if not isinstance(value, allowed) or (isinstance(value, bool)
                                                  and bool not in allowed):
                said = " or ".join(_TYPE_NAMES[t] for t in allowed)
                raise InvalidRequest(f"{where}{key} = {value!r} must be {said}")

    check("", data, _TOP_LEVEL_TYPES)
    for pname, pdata in data.get("partitions", {}).items():
        if not isinstance(pdata, dict):
            raise InvalidRequest(f"partitions.{pname} = {pdata!r} must be a table "
                                 f"([partitions.{pname}])")
        check(f"partitions.{pname}.", pdata, _PARTITION_TYPES)


def profile_for_cluster(cluster_name: str, paths: Iterable[Path] | None = None) -> str | None:
    """The profile whose ``cluster_names`` include ``cluster_name`` (Slurm's ClusterName)."""
    wanted = cluster_name.strip().lower()
    if not wanted:
        return None
    for name in available_profiles(paths):
        try:
            profile = load_profile(name, paths)
        except InvalidRequest:
            continue  # a broken site file must not stop detection
        if wanted in {c.lower() for c in profile.cluster_names}:
            return name
    return None
