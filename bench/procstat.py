"""A process tree's CPU time and resident memory, read from /proc (Linux).

CPU is utime + stime of every live process in the tree (the proxy and its workers), so it counts
what the proxy spent, whatever the speed of the client that loaded it.
"""

from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def tree(pid: int) -> list[int]:
    """`pid` and all its live descendants."""
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except OSError:
                continue
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (ones that exited count as 0)."""
    ticks = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    return ticks / _TICKS


def rss_bytes(pids: list[int]) -> int:
    """Sum of VmRSS over these processes (shared pages are counted once per process)."""
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
                break
    return total
