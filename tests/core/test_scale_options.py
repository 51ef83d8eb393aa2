"""The scale options (core/scale.py): checks, and the lines they add to the job script;
the node-local staging functions (node/staging.py) on real files."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest

from hpc_magics.backends.submitit_backend import SlurmBackend
from hpc_magics.core import scale
from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.profiles import load_profile
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.node import staging

PYTHON = "/opt/py/bin/python"
FOLDER = "/home/me/hpc_jobs/train-1"


def script(opts: scale.ScaleOptions, **request: object) -> str:
    return SlurmBackend(python=PYTHON).job_script(
        FOLDER, ResourceRequest(profile="lab", **request), load_profile("lab"),  # type: ignore[arg-type]
        "train", opts)


def test_plain_cell_script_is_unchanged_by_empty_options() -> None:
    assert script(scale.ScaleOptions()) == script(None)  # type: ignore[arg-type]
    assert "#SBATCH --signal=USR2@0" in script(scale.ScaleOptions())


def test_checkpoint_signals_before_the_limit_and_requeues() -> None:
    text = script(scale.options(checkpoint="model,epoch", margin_s=120, time_limit_s=3600),
                  time_s=3600)
    assert "#SBATCH --signal=USR2@120" in text and "#SBATCH --requeue" in text
    assert "staging" not in text


def test_stage_and_stage_back_lines(tmp_path: Path) -> None:
    (tmp_path / "data.tar.gz").write_bytes(b"")
    opts = scale.options(stage=[str(tmp_path / "data.tar.gz")], stage_back=str(tmp_path / "out"))
    lines = script(opts, nodes=2).splitlines()
    stage_in = next(line for line in lines if ".staging in " in line)
    assert stage_in.startswith(scale.EVERY_NODE)
    assert stage_in.endswith(str(tmp_path / "data.tar.gz"))
    # the cell runs in the background so the TERM trap copies back at once
    cell = next(i for i, line in enumerate(lines) if "hpc_magics.node.engine" in line)
    assert lines[cell].endswith(" &") and lines[cell - 1] == "trap hpc_magics_stop TERM"
    assert lines[-1] == "exit $status"
    assert any(line.endswith(f"staging back {tmp_path / 'out'}") for line in lines[cell:])


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"stage": ["/no/such/path"]}, "--stage /no/such/path: no such file"),
    ({"gather": "a,2b"}, "--gather 'a,2b'"),
    ({"chain": 3}, "need --checkpoint"),
    ({"checkpoint": "x", "chain": -1}, "--chain -1"),
    ({"checkpoint": "x", "margin_s": 60, "time_limit_s": 60}, "not shorter"),
    ({"stage_back": "/no/such/parent/out"}, "parent folder /no/such/parent"),
])
def test_bad_values_are_named(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(InvalidRequest, match=says.replace("(", r"\(")):
        scale.options(**kwargs)  # type: ignore[arg-type]


def test_two_inputs_with_one_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "data").mkdir()
    (tmp_path / "data.zip").write_bytes(b"")
    with pytest.raises(InvalidRequest, match="'data'"):
        scale.options(stage=[str(tmp_path / "a" / "data"), str(tmp_path / "data.zip")])


def test_chain_defaults_with_checkpoint_only() -> None:
    assert scale.options(checkpoint="x").chain == scale.DEFAULT_CHAIN
    assert scale.options().chain == 0
    assert scale.ScaleOptions.from_dict(scale.options(gather="a,b").to_dict()).gather == ("a", "b")


def test_staging_copies_extracts_and_cleans(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "x.txt").write_text("x")
    (tmp_path / "one.csv").write_text("1,2")
    (tmp_path / "t.txt").write_text("t")
    with tarfile.open(tmp_path / "arch.tar.gz", "w:gz") as bundle:
        bundle.add(tmp_path / "t.txt", arcname="t.txt")
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as bundle:
        bundle.write(tmp_path / "t.txt", arcname="deep/t.txt")
    env = {"SLURM_JOB_ID": "77", "SLURMD_NODENAME": "c9"}
    root = staging.local_root(env)
    assert root.name.endswith("-77-c9") and root.name.startswith(staging.PRIVATE_PREFIX)
    paths = [str(source), str(tmp_path / "one.csv"), str(tmp_path / "arch.tar.gz"),
             str(tmp_path / "z.zip")]
    try:
        staged = staging.stage_in(paths, root)
        assert staged == staging.staged_paths(paths, root)
        assert Path(staged["src"], "sub", "x.txt").read_text() == "x"
        assert Path(staged["one.csv"]).read_text() == "1,2"
        assert Path(staged["arch"], "t.txt").read_text() == "t"
        assert Path(staged["z"], "deep", "t.txt").read_text() == "t"
        assert oct(root.stat().st_mode & 0o777) == "0o700"
        (root / staging.OUT_DIR / "r.txt").write_text("result")
        assert (staging.stage_back(str(tmp_path / "back"), root) / "r.txt").read_text() == "result"
        # a site's $SLURM_TMPDIR is the site's to clean; ours goes
        assert staging.local_root({**env, "SLURM_TMPDIR": "/local/77"}) == Path("/local/77")
        assert not staging.clean(root, {**env, "SLURM_TMPDIR": str(root)})
        assert staging.clean(root, env) and not root.exists()
    finally:
        staging.clean(root, env)


def test_segments_from_sacct_duplicates() -> None:
    from hpc_magics.scheduler.accounting import parse_segments

    text = ("595|REQUEUED|2026-11-23T18:04:52|2026-11-23T18:05:25\n"
            "595|PENDING|Unknown|Unknown\n"
            "5950|COMPLETED|2026-11-23T18:00:00|2026-11-23T18:01:00\n"
            "595|REQUEUED|2026-11-23T18:05:38|2026-11-23T18:06:10\n")
    segments = parse_segments(text, "595")
    assert [s.state for s in segments] == ["REQUEUED", "REQUEUED", "PENDING"]
    assert [s.index for s in segments] == [1, 2, 3]
    assert segments[0].end is not None and segments[2].start is None
