"""pack / unpack of this tree against another revision's, side by side in one process.

    .venv/bin/python benchmarks/pack_ab.py --base main [--only 'size=64K,256K op=unpack']
        [--base-dir DIR]

The base revision's ``src/tilewise`` is exported with ``git archive`` into a temporary
directory as the package ``tilewise_base`` (its numba cache stays there), and every sweep cell
(``pack_sweep``'s sizes, dtypes and layouts, ``--only`` to filter) times, round by round in
a rotating order after the same 4 MiB eviction: ``np.copyto``, the streaming memcpy child
(``copy_baseline``), the base revision's and this tree's ``pack``/``unpack`` (``out=``,
single thread). Ratios are per-round medians against the faster copy of the same round, so
the two revisions see the same machine state. Results: ``results/pack_ab.json``.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

import tilewise.layout.pack as current
from copy_baseline import StreamingCopy
from pack_sweep import _evict, _size, cells, parse_only

ROOT = Path(__file__).resolve().parent.parent


def _base_module(rev: str, where: Path):
    """``tilewise_base.layout.pack`` from revision ``rev``, exported under ``where``."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], check=True,
                            capture_output=True, text=True).stdout.strip()
    stamp = where / "tilewise_base" / "COMMIT"
    if not (stamp.exists() and stamp.read_text() == commit):  # else reuse it and its cache
        raw = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src/tilewise"],
                             check=True, capture_output=True).stdout
        shutil.rmtree(where / "tilewise_base", ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            tar.extractall(where, filter="data")
        (where / "src" / "tilewise").rename(where / "tilewise_base")
        stamp.write_text(commit)
    sys.path.insert(0, str(where))
    return importlib.import_module("tilewise_base.layout.pack")


def _calls(mod, op, x, packed, lay, out):
    if op == "pack":
        return lambda: mod.pack(x, lay.pos, lay.tiles, out=out)
    return lambda: mod.unpack(packed, lay.pos, lay.tiles, shape=x.shape, out=out)


def _cell(op, x, packed, lay, base, stream, rounds) -> dict:
    src, want = (x, packed) if op == "pack" else (packed, x)
    outs = {k: np.empty_like(want) for k in ("base", "new")}
    mem_src = src.reshape(-1)
    mem_dst = np.empty_like(mem_src)
    timers = {"copyto": lambda: np.copyto(mem_dst, mem_src), "stream": None,
              "base": _calls(base, op, x, packed, lay, outs["base"]),
              "new": _calls(current, op, x, packed, lay, outs["new"])}
    for k, f in timers.items():
        if f is not None:
            f(), f(), f()
            if k != "copyto" and outs[k].tobytes() != want.tobytes():
                raise AssertionError(f"{k} {op} {lay.label} {x.dtype}: wrong bytes")
    order = list(timers)
    t = {k: [] for k in order}
    for r in range(rounds):
        for k in order[r % 4:] + order[:r % 4]:
            if k == "stream":
                t[k].append(stream.time())
                continue
            _evict()
            t0 = time.perf_counter()
            timers[k]()
            t[k].append(time.perf_counter() - t0)
    t = {k: np.array(v) for k, v in t.items()}
    fastest = np.minimum(t["copyto"], t["stream"])
    return {f"{k}_to_fastest": float(np.median(fastest / t[k])) for k in ("base", "new")} | {
        "new_over_base": float(np.median(t["base"] / t["new"])), "rounds": rounds}


def measure(only, base_rev: str, base_dir, rounds: int, cell=None) -> list[dict]:
    """Time every cell ``only`` admits, pack and unpack, with ``cell`` (default :func:`_cell`):
    the base revision exported (into ``base_dir``, else a temporary directory) against this
    tree; prints a line per cell and returns the rows."""
    cell_fn = _cell if cell is None else cell
    rows = []
    print(f"{'op':6} {'dtype':4} {'size':>5} {'tile':>8}  {'base':>5} {'new':>5}  new/base"
          f"   (ratios to the fastest copy, per-round medians)")
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(base_dir or tmp)
        where.mkdir(parents=True, exist_ok=True)
        base = _base_module(base_rev, where)
        stream = StreamingCopy()
        try:
            for c in cells(only):
                if stream.nbytes != c.nbytes:
                    stream.alloc(c.nbytes)
                x, packed = c.tensors()
                lay = c.layout
                for op in ("pack", "unpack"):
                    if not only.admits("ops", op):
                        continue
                    res = cell_fn(op, x, packed, lay, base, stream, rounds)
                    rows.append(dict(op=op, dtype=c.dt, bytes=c.nbytes, layout=lay.label,
                                     **res))
                    print(f"{op:6} {c.dt:4} {_size(c.nbytes):>5} {lay.label:>8}  "
                          f"{res['base_to_fastest']:5.2f} {res['new_to_fastest']:5.2f}  "
                          f"{res['new_over_base']:8.2f}", flush=True)
        finally:
            stream.close()
    return rows


def main(doc: str = __doc__, out_name: str = "pack_ab.json", cell=None) -> None:
    """The A/B command line (``doc``'s first line as its description), results to
    ``benchmarks/results/<out_name>`` by default, each cell timed by ``cell`` (default
    :func:`_cell`); ``pack_bands_ab.py`` runs it with its own cell timing."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--base", default="main", help="git revision to compare against")
    ap.add_argument("--only", default="", help="sweep filter (see pack.py --only)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / out_name))
    ap.add_argument("--base-dir", default=None,
                    help="keep the exported base revision (and its numba cache) here between "
                         "runs (default: a temporary directory)")
    args = ap.parse_args()
    only = parse_only(args.only)
    report(measure(only, args.base, args.base_dir, args.rounds, cell), args.base, args.out)


def report(rows: list[dict], base_rev: str, out: str) -> None:
    """Print how many cells reach 0.7 of the fastest copy, base and new, and write ``out``."""
    above = {k: sum(r[f"{k}_to_fastest"] >= 0.7 for r in rows) for k in ("base", "new")}
    print(f"{len(rows)} cells; >= 0.7 of the fastest copy: base {above['base']}, new "
          f"{above['new']}; new/base median {np.median([r['new_over_base'] for r in rows]):.2f}")
    Path(out).write_text(json.dumps(dict(base=base_rev, rows=rows), indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
