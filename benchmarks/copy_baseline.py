"""The fastest single-threaded copy this machine does: glibc memcpy with streaming stores.

glibc's memcpy switches to non-temporal (streaming) stores only above
``x86_non_temporal_threshold`` (about 3/4 of the L3 per thread by default), and the tunable
is read once at process start. ``StreamingCopy`` therefore runs a child Python process with
``GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=<threshold>`` that copies its own
buffers of the requested size on demand, one timed copy per request, so a benchmark can
interleave it with its own candidates round by round.

Protocol (one line each way): ``alloc <bytes>`` -> ``ok``; ``time`` -> seconds of one
``np.copyto`` (glibc memcpy) after rewriting the same 4 MiB scratch the parent evicts with;
``quit``.
"""

from __future__ import annotations

import os
import subprocess
import sys

# Streaming stores from 64 KiB on: every size the sweep measures bypasses the cache.
NT_THRESHOLD = 0x10000

_CHILD = r"""
import sys, time
import numpy as np
scratch = np.zeros(4 << 20, dtype=np.uint8)
src = dst = None
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "alloc":
        src = np.frombuffer(np.random.default_rng(0).bytes(int(cmd[1])), np.uint8).copy()
        dst = np.empty_like(src)
        np.copyto(dst, src); np.copyto(dst, src)  # page faults, warm
        print("ok", flush=True)
    elif cmd[0] == "time":
        scratch.view(np.uint64)[::8] += 1
        t = time.perf_counter()
        np.copyto(dst, src)
        print(repr(time.perf_counter() - t), flush=True)
    else:
        break
"""


class StreamingCopy:
    """A child process timing memcpy with streaming stores from ``threshold`` bytes on."""

    def __init__(self, threshold: int = NT_THRESHOLD):
        env = dict(os.environ, GLIBC_TUNABLES=f"glibc.cpu.x86_non_temporal_threshold={threshold:#x}",
                   OMP_NUM_THREADS="1")
        self.nbytes = 0  # the size of the child's buffers
        self._proc = subprocess.Popen([sys.executable, "-c", _CHILD], env=env, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def _ask(self, line: str) -> str:
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()
        return self._proc.stdout.readline().strip()

    def alloc(self, nbytes: int) -> None:
        """Give the child source and destination buffers of ``nbytes`` bytes."""
        if self._ask(f"alloc {nbytes}") != "ok":
            raise RuntimeError("streaming-copy child failed to allocate")
        self.nbytes = nbytes

    def time(self) -> float:
        """Seconds of one copy of the allocated bytes."""
        return float(self._ask("time"))

    def close(self) -> None:
        self._ask("quit")
        self._proc.wait()
