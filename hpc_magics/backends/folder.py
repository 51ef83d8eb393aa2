"""A job's folder: everything a job needs and leaves behind, private to the user.

Layout: ``job.py`` (the cell, readable), ``job.sh`` (the exact script submitted),
``meta.json`` (id, backend, request, what was shipped), submitit's pickles and logs,
``output.txt`` (the cell's printed output), ``results.pkl`` and ``figures/``.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import HpcMagicsError
from ..shipping.runner import OUTPUT_FILE, RESULTS_FILE, CellResult

META_FILE = "meta.json"
PRIVATE = 0o700
WOULD_BE_STAMP, WOULD_BE_TOKEN = "YYYYMMDD-HHMMSS", "XXXX"


def ensure_private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE)
    if stat.S_IMODE(path.stat().st_mode) != PRIVATE:
        path.chmod(PRIVATE)
    return path


def check_owned(path: Path) -> None:
    """Refuse files another user owns or may write: unpickling them runs their code."""
    info = path.stat()
    if info.st_uid != os.getuid():
        raise HpcMagicsError(f"{path} belongs to another user: refusing to load it")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise HpcMagicsError(f"{path} is writable by others: refusing to load it "
                             f"(chmod go-w {path} if you trust it)")


@dataclass(frozen=True)
class JobFolder:
    path: Path

    @classmethod
    def create(cls, root: Path, name: str) -> JobFolder:
        ensure_private_dir(root)
        path = root / _folder_name(name, time.strftime("%Y%m%d-%H%M%S"), secrets.token_hex(2))
        path.mkdir(mode=PRIVATE)
        path.chmod(PRIVATE)
        return cls(path)

    @staticmethod
    def would_be(root: Path, name: str) -> Path:
        """Where ``create`` would put the folder, its time stamp and random part spelled out
        (for a dry run, which creates nothing)."""
        return root / _folder_name(name, WOULD_BE_STAMP, WOULD_BE_TOKEN)

    # --------------------------------------------------------------- metadata
    def write_meta(self, meta: dict[str, Any]) -> None:
        target = self.path / META_FILE
        temporary = target.with_suffix(".tmp")
        temporary.write_text(json.dumps(meta, indent=2, sort_keys=True))
        os.replace(temporary, target)

    def meta(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads((self.path / META_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return data

    def update_meta(self, **changes: Any) -> None:
        meta = self.meta()
        meta.update(changes)
        self.write_meta(meta)

    # ----------------------------------------------------------------- results
    @property
    def results_path(self) -> Path:
        return self.path / RESULTS_FILE

    def has_results(self) -> bool:
        return self.results_path.exists()

    def load_results(self) -> CellResult:
        check_owned(self.path)
        check_owned(self.results_path)
        with self.results_path.open("rb") as stream:
            result = pickle.load(stream)
        if not isinstance(result, CellResult):
            raise HpcMagicsError(f"{self.results_path} is not an hpc_magics result file")
        return result

    def output(self) -> str:
        try:
            return (self.path / OUTPUT_FILE).read_text(errors="replace")
        except OSError:
            return ""


def _folder_name(name: str, stamp: str, token: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "job"
    return f"{safe}-{stamp}-{token}"


def find_job_folders(root: Path) -> Iterator[JobFolder]:
    """Every job folder under ``root``, newest first."""
    if not root.is_dir():
        return
    candidates = [p for p in root.iterdir() if (p / META_FILE).is_file()]
    candidates.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for path in candidates:
        yield JobFolder(path)
