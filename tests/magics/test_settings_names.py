"""The kernel's settings are ``c.HpcMagicsKernel.*``; ``c.HpcMagics.*``, the name they once
shared with the server's settings, still works from a real IPython profile's
``ipython_config.py`` and from ``%config``, with one line naming the new spelling."""

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
before = {"jobs_dir": magics.jobs_dir, "python": magics.python,
          "max_shipped_mb": magics.max_shipped_mb}
ip.run_line_magic("config", "HpcMagics.default_profile = 'lab'")
print("RESULT " + json.dumps({**before, "default_profile": magics.default_profile}))
"""


def _ipython(tmp_path: Path, config: str) -> tuple[dict[str, object], list[str]]:
    """Start IPython with a profile whose ipython_config.py is ``config``; what the
    kernel's settings read, and the lines it wrote on stderr about the old name."""
    profile = tmp_path / "profile_test"
    profile.mkdir()
    (profile / "ipython_config.py").write_text(config)
    done = subprocess.run(
        [sys.executable, "-m", "IPython", f"--profile-dir={profile}", "--no-banner",
         "--HistoryManager.enabled=False", "-c", CHILD],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=True)
    result = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    said = [line for line in done.stderr.splitlines() if "c.HpcMagics." in line]
    return json.loads(result.removeprefix("RESULT ")), said


def test_the_new_spelling_configures_the_kernel_without_a_warning(tmp_path: Path) -> None:
    settings, said = _ipython(tmp_path, "c.HpcMagicsKernel.jobs_dir = 'scratch/jobs'\n"
                                        "c.HpcMagicsKernel.max_shipped_mb = 5.0\n")
    assert settings["jobs_dir"] == "scratch/jobs" and settings["max_shipped_mb"] == 5.0
    assert settings["default_profile"] == "lab"  # %config with the old class name, too
    assert said == []


def test_the_old_spelling_still_works_with_one_line_naming_the_new(tmp_path: Path) -> None:
    settings, said = _ipython(tmp_path, "c.HpcMagics.jobs_dir = 'old/jobs'\n"
                                        "c.HpcMagics.python = '/opt/py/bin/python'\n"
                                        "c.HpcMagics.max_shipped_mb = 7.0\n"
                                        "c.HpcMagicsKernel.max_shipped_mb = 9.0\n")
    assert settings["jobs_dir"] == "old/jobs"
    assert settings["python"] == "/opt/py/bin/python"
    assert settings["max_shipped_mb"] == 9.0  # the new spelling wins over the old
    assert len(said) == 1, said
    assert "c.HpcMagics.jobs_dir is now c.HpcMagicsKernel.jobs_dir" in said[0]
    assert "c.HpcMagics.max_shipped_mb" in said[0] and "c.HpcMagics.python" in said[0]
