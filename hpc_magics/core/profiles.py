"""Cluster profiles: what a site allows and how it spells requests, kept as data.

Profiles are TOML files.  The packaged ones live in ``hpc_magics/profiles``; a site
can add or override them in ``/etc/hpc_magics/profiles`` and a user in
``~/.config/hpc_magics/profiles``; ``HPC_MAGICS_PROFILE_PATH`` (``os.pathsep``
separated) comes first of all. Their shell lines run as the user: a file there is used
only when no one but the user or root could have written it.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, cast

from .errors import InvalidRequest
from .units import parse_memory, parse_time
from .users import user_name

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
    # a regex of the GPU types a site takes besides gpu_types (MIG slices: h100_3g.40gb)
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

    def gpu_types(self) -> tuple[str, ...]:
        """Every partition's GPU types, once each, in the profile's order."""
        return tuple(dict.fromkeys(t for p in self.partitions.values() for t in p.gpu_types))

    def envelope(self) -> Partition | None:
        """The most any partition allows: what a job that names no partition is checked
        against when the site routes jobs itself (no default partition)."""
        if not self.partitions:
            return None
        parts = list(self.partitions.values())

        def most(name: str) -> int | None:
            values = [getattr(p, name) for p in parts]
            return None if None in values else max(v for v in values if v)

        return Partition(
            name="(any partition)", max_time_s=most("max_time_s"), max_nodes=most("max_nodes"),
            cpus_per_node=most("cpus_per_node"), mem_per_node_mb=most("mem_per_node_mb"),
            gpus_per_node=max(p.gpus_per_node for p in parts),
            gpu_types=self.gpu_types() if all(p.gpu_types or not p.gpus_per_node for p in parts)
            else (),
            gpu_type_pattern="|".join(f"(?:{p.gpu_type_pattern})" for p in parts
                                      if p.gpu_type_pattern),
        )


# A TOML value becomes a field's value by the field's annotation (its first word), and must
# have that TOML type; the keys named or read otherwise are in _SPECIAL.
_FORMS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "str": (str, str), "int": (int, int), "bool": (bool, bool), "tuple": (list, tuple),
    "Mapping": (dict, dict)}
_TYPE_NAMES = {str: "a string", int: "a whole number", bool: "true or false",
               list: "a list", dict: "a table"}


def _partition(name: str, data: Any) -> Partition:
    if not isinstance(data, dict):
        raise InvalidRequest(f"partitions.{name} = {data!r} must be a table "
                             f"([partitions.{name}])")
    return cast(Partition, _from_toml(Partition, data, f"partitions.{name}.", name=name))


# field → (its TOML key, the TOML types it takes, how it is read)
_SPECIAL: dict[str, tuple[str, Any, Callable[[Any], Any]]] = {
    "max_time_s": ("max_time", (str, int), parse_time),
    "mem_per_node_mb": ("mem_per_node", (str, int), parse_memory),
    "gpus_per_type": ("gpus_per_type", dict, lambda v: {str(k): int(n) for k, n in v.items()}),
    "gpu_counts": ("gpu_counts", list, lambda v: tuple(int(n) for n in v)),
    "partitions": ("partitions", dict, lambda v: {n: _partition(n, d) for n, d in v.items()}),
    "extra_directives": ("extra_directives", dict,
                         lambda v: tuple((k, str(x)) for k, x in v.items())),
    "balance_command": ("balance_command", list, lambda v: tuple(str(a) for a in v)),
    "documented_on": ("documented_on", object, str),  # a TOML date reads as well
}


def toml_keys(cls: Any) -> set[str]:
    """The keys a profile's table of this kind takes (``name`` and ``source`` are given)."""
    return {(_SPECIAL.get(spec.name) or (spec.name,))[0] for spec in fields(cls)} - {
        "name", "source"}


def _from_toml(cls: Any, data: Mapping[str, Any], where: str, **given: Any) -> Any:
    """A ``cls`` from a TOML table; a value of the wrong type is refused, naming its key."""
    values = dict(given)
    keys = toml_keys(cls) - set(given)
    for key in sorted(set(data) - keys):  # a misspelt key would be ignored silently
        near = difflib.get_close_matches(key, keys, n=1)
        raise InvalidRequest(f"{where}{key} is not a profile key"
                             + (f": did you mean {where}{near[0]}?" if near else
                                ": the keys are listed in docs/admin/site-profile.md"))
    for spec in fields(cls):
        key, wanted, read = _SPECIAL.get(spec.name) or (
            spec.name, *_FORMS[re.match(r"\w+", str(spec.type)).group()])  # type: ignore[union-attr]
        if spec.name in given or key not in data:
            continue
        value = data[key]
        allowed = wanted if isinstance(wanted, tuple) else (wanted,)
        # bool is an int to Python, not to a profile
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            said = " or ".join(_TYPE_NAMES[t] for t in allowed)
            raise InvalidRequest(f"{where}{key} = {value!r} must be {said}")
        values[spec.name] = read(value)
    return cls(**values)


def profile_from_mapping(name: str, data: Mapping[str, Any], source: str = "") -> ClusterProfile:
    return cast(ClusterProfile, _from_toml(ClusterProfile, data, "", name=name, source=source))


def search_path() -> list[Path]:
    """Folders searched for profiles, first match wins."""
    paths = [Path(p) for p in os.environ.get("HPC_MAGICS_PROFILE_PATH", "").split(os.pathsep) if p]
    config_home = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    return [*paths, config_home / "hpc_magics" / "profiles", Path("/etc/hpc_magics/profiles"),
            PACKAGED_DIR]


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
        raise InvalidRequest(f"profile {name!r} is unknown: use one of {', '.join(sorted(files))}")
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
        return (path, None), read_toml(path)  # reading it says what is wrong
    # A profile's ``setup``, ``environment``, ``balance_command`` and ``kernel`` become
    # commands run as this user: a site or user file (not the package's own) is used only
    # when this user or root alone could have written it and its folder.
    why = None if path.parent.resolve() == PACKAGED_DIR else others_could_write(path, stat)
    if why is not None:
        raise InvalidRequest(
            f"profile file {path} is not used: {why}, and a profile's setup and commands "
            "run as you: make it yours and not writable by others (chmod go-w), or remove it")
    stamp = (path, stat.st_mtime_ns, stat.st_size, stat.st_mode, stat.st_uid)
    if stamp not in _RAW:
        _RAW[stamp] = read_toml(path)
    return stamp, _RAW[stamp]


def others_could_write(path: Path, stat: os.stat_result | None = None) -> str | None:
    """Why someone besides this user and root could have written ``path`` (the file or its
    folder), as ``"it is owned by bob"``; None when no one could."""
    try:
        for info, said, folder in ((stat or path.stat(), "it is", False),
                                   (path.parent.stat(), f"its folder {path.parent} is", True)):
            if info.st_uid not in (os.getuid(), 0):
                return f"{said} owned by {user_name(info.st_uid)}"
            # a sticky folder (/tmp) lets others add files, never replace this user's
            if info.st_mode & 0o022 and not (folder and info.st_mode & 0o1000):
                return f"{said} writable by others (group or world)"
    except OSError:
        pass  # reading it says what is wrong
    return None


def read_toml(path: Path, what: str = "profile file") -> dict[str, Any]:
    if sys.version_info >= (3, 11):  # loaded here, not at import: %load_ext stays cheap
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise InvalidRequest(f"{what} {path} is not valid TOML: {error}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidRequest(f"{what} {path} cannot be read ({error}): fix its "
                             "permissions or remove it") from None

