"""The TCP ports a process listens on, as the kernel reports them: (address, port) pairs.

Read from Linux's /proc (the process's socket inodes, matched in /proc/net/tcp and tcp6):
what the operating system says the process bound, not what a connection file claims.
``listening`` is self-contained: its source is also run inside a kernel on a node.
"""

from __future__ import annotations

import inspect


def listening(pid: str = "self") -> list[tuple[str, int]]:
    import os

    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                    continue
                address, port = fields[1].split(":")
                if table == "tcp":  # little-endian IPv4 in hex
                    address = ".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0))
                else:  # an IPv6 listener is never the node's IPv4 address: shown as is
                    address = f"ipv6:{address}"
                found.add((address, int(port, 16)))
    return sorted(found)


def in_kernel_code() -> str:
    """Code that prints the kernel's own listening sockets, one ``address port`` a line."""
    return (inspect.getsource(listening) +
            "for _a, _p in listening():\n    print(_a, _p)\n")
