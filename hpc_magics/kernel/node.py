"""``python -m hpc_magics.kernel.node``: the node side's old path, which the job scripts of
Slurm kernels queued before an upgrade still name; it moved to ``hpc_magics.node.kernel``."""

from __future__ import annotations

import sys

from ..node.kernel import main

if __name__ == "__main__":
    main(sys.argv[1:])
