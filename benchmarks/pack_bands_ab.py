"""pack / unpack of this tree against another revision's, into the same destination array.

    .venv/bin/python benchmarks/pack_bands_ab.py --base main --base-dir DIR
        [--only 'layout=T(16,2),NCHW16c size=16M'] [--rounds 15]

``pack_ab.py`` gives each revision its own destination; at 16 MiB and more, two fresh arrays
of the same size can differ in how they are mapped (huge pages or not), and the same code
measured 0.4-1.0x itself. Here both revisions write one array, and each cell times, round
by round in a rotating order after the same 4 MiB eviction (``pack_sweep._evict``):
``np.copyto``, the streaming memcpy child (``copy_baseline``), the base revision's
``pack``/``unpack`` and this tree's (``out=``, single thread). Ratios are per-round medians
against the faster copy of the same round. Results: ``results/pack_bands_ab.json``.
"""

from __future__ import annotations

import time

import numpy as np

import tilewise.layout.pack as current
import pack_ab
from pack_ab import _calls
from pack_sweep import _evict


def _timed(f) -> float:
    """Seconds of one call of ``f`` after the eviction."""
    _evict()
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def _cell(op, x, packed, lay, base, stream, rounds) -> dict:
    """Per-round medians of each revision against the faster copy, and of base / new."""
    src, want = (x, packed) if op == "pack" else (packed, x)
    out = np.empty_like(want)
    mem_src = src.reshape(-1)
    mem_dst = np.empty_like(mem_src)
    runs = {"base": _calls(base, op, x, packed, lay, out),
            "new": _calls(current, op, x, packed, lay, out)}
    for k, f in runs.items():
        out[...] = 0
        f(), f(), f()
        if out.tobytes() != want.tobytes():
            raise AssertionError(f"{k} {op} {lay.label} {x.dtype}: wrong bytes")
    timers = {"copyto": lambda: _timed(lambda: np.copyto(mem_dst, mem_src)),
              "stream": stream.time, "base": lambda: _timed(runs["base"]),
              "new": lambda: _timed(runs["new"])}
    order = list(timers)
    t = {k: [] for k in order}
    for r in range(rounds):
        for k in order[r % 4:] + order[:r % 4]:
            t[k].append(timers[k]())
    t = {k: np.array(v) for k, v in t.items()}
    fastest = np.minimum(t["copyto"], t["stream"])
    return {f"{k}_to_fastest": float(np.median(fastest / t[k])) for k in ("base", "new")} | {
        "new_over_base": float(np.median(t["base"] / t["new"])), "rounds": rounds}


def main() -> None:
    pack_ab.main(__doc__, "pack_bands_ab.json", _cell)


if __name__ == "__main__":
    main()
