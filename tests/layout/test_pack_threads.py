"""pack/unpack from several threads at once (issue 18): packing the two halves of an f32
array with tiles (16, 2) from worker threads crashed the process (heap corruption, a
segfault) once the kernels were loaded. The cause was a use-after-free of the kernels'
scratch, whose memory only other threads' allocations reused. Run in a child process, so a
crash is a test failure with its message rather than the end of the test run."""

import subprocess
import sys

CHILD = r"""
import numpy as np
from concurrent.futures import ThreadPoolExecutor
import tilewise as tw
from tilewise.layout.kernels import STREAMING_BYTES

n = 2048  # halves of 8 MiB: the streaming (non-temporal) kernels, which use the scratch
x = np.random.default_rng(0).random((n, n), dtype=np.float32)
halves = [np.ascontiguousarray(x[: n // 2]), np.ascontiguousarray(x[n // 2:])]
assert halves[0].nbytes >= STREAMING_BYTES
want = [tw.pack_reference(h, (0, 1), (16, 2)) for h in halves]
for _ in range(12):  # fresh threads each round: their own malloc arenas
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda h: tw.pack(h, (0, 1), (16, 2)), halves * 2))
        back = list(ex.map(lambda p: tw.unpack(p, (0, 1), (16, 2)), got))
    for g, w, b, h in zip(got, want * 2, back, halves * 2):
        assert np.array_equal(g, w) and np.array_equal(b, h)
print("ok")
"""


def test_pack_from_several_threads_at_once():
    run = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-2000:])
