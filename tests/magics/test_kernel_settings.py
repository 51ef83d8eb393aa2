"""The kernel's settings are ``c.HpcMagicsKernel.*``, read from a real IPython profile's
``ipython_config.py`` and from ``%config``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHILD = """
import json
ip = get_ipython()
ip.run_line_magic("load_ext", "hpc_magics")
magics = ip.magics_manager.registry["HpcMagicsKernel"]
before = {"jobs_dir": magics.jobs_dir, "max_shipped_mb": magics.max_shipped_mb}
ip.run_line_magic("config", "HpcMagicsKernel.default_profile = 'lab'")
print("RESULT " + json.dumps({**before, "default_profile": magics.default_profile}))
"""


def _ipython(tmp_path: Path, config: str) -> tuple[dict[str, object], list[str]]:
    """Start IPython with a profile whose ipython_config.py is ``config``; what the
    kernel's settings read, and the lines it wrote on stderr about hpc_magics."""
    profile = tmp_path / "profile_test"
    profile.mkdir()
    (profile / "ipython_config.py").write_text(config)
    done = subprocess.run(
        [sys.executable, "-m", "IPython", f"--profile-dir={profile}", "--no-banner",
         "--HistoryManager.enabled=False", "-c", CHILD],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=True)
    result = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    said = [line for line in done.stderr.splitlines() if "hpc_magics" in line]
    return json.loads(result.removeprefix("RESULT ")), said


def test_ipython_config_and_config_magic_set_the_kernel_settings(tmp_path: Path) -> None:
    settings, said = _ipython(tmp_path, "c.HpcMagicsKernel.jobs_dir = 'scratch/jobs'\n"
                                        "c.HpcMagicsKernel.max_shipped_mb = 5.0\n")
    assert settings["jobs_dir"] == "scratch/jobs" and settings["max_shipped_mb"] == 5.0
    assert settings["default_profile"] == "lab"  # %config
    assert said == []

