"""``python docs/_ext/hm_reference [-o FILE] [--check]``: refresh (or check) the reference page.

The page is rendered in a child process with a clean environment, so that it documents the
package as shipped: not this shell's ``HPC_MAGICS_*`` settings, this user's profiles or the
width of this terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

if not __package__:  # run as `python docs/_ext/hm_reference`: import it as the package
    sys.path[0] = str(Path(__file__).resolve().parents[1])
    import hm_reference  # noqa: F401

    __package__ = "hm_reference"

from . import REFERENCE_PAGE, REFRESH_COMMAND

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]


def _render_here() -> str:
    from hpc_magics.core import profiles

    from .page import render

    # Only the packaged profiles: a site's /etc/hpc_magics/profiles is not the package's.
    profiles.search_path = lambda: [profiles.PACKAGED_DIR]
    return render()


def render_clean(timeout_s: float = 120.0) -> str:
    """The page, rendered by a fresh interpreter that sees none of this environment."""
    from hpc_magics.core.errors import HpcMagicsError
    from hpc_magics.scheduler import commands

    with tempfile.TemporaryDirectory(prefix="hpc-magics-reference-") as home:
        environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": os.pathsep.join(
                [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
            "HOME": home, "XDG_CONFIG_HOME": home, "IPYTHONDIR": str(Path(home, "ipython")),
            "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
        }
        result = commands.run([sys.executable, str(HERE), "--here"],
                              timeout=timeout_s, environ=environ)
    if not result.ok:
        raise HpcMagicsError(f"rendering the reference failed: {result.stderr.strip()}")
    return result.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"{REFRESH_COMMAND}", description=__doc__)
    parser.add_argument("-o", "--output", type=Path, default=REFERENCE_PAGE,
                        help="the page to write or check (default: docs/reference.md)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the page differs from a fresh render")
    parser.add_argument("--here", action="store_true",
                        help="print the page rendered in this process (what the child runs)")
    args = parser.parse_args(argv)
    if args.here:
        sys.stdout.write(_render_here())
        return 0
    fresh = render_clean()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != fresh:
            print(f"{args.output} is stale: run `{REFRESH_COMMAND}` to refresh it",
                  file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(fresh, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
