"""pack / unpack at every size and dtype against the fastest copy (``pack.py --sweep``).

Cells: sizes 64 KiB .. 256 MiB (of the unpacked tensor) x f32/bf16/i8 x tiles T(8,8),
T(16,32), T(32,32), T(16,2), T(64,64) of a 2-D tensor (power-of-two shapes, rows <= cols) and
the NCHW -> NCHWc (c = 16) pack of a [1, 64, H, W] tensor, each packed and unpacked. Each
cell times, interleaved round by round (the same 4 MiB eviction before every timed call):

* ``copyto``: ``np.copyto`` of the same bytes in this process (glibc memcpy, which streams
  only above ~3/4 of the L3);
* ``stream``: memcpy with streaming stores from 64 KiB on, in a child process
  (``copy_baseline.StreamingCopy``);
* ``tilewise``: ``tilewise.pack`` / ``tilewise.unpack`` with ``out=``, single thread.

``/fastest`` is the median over rounds of ``min(copyto, stream) / tilewise`` (per round);
``/copyto`` the same against ``copyto`` alone. Results: ``results/pack_sweep.json``.
"""

from __future__ import annotations

import json
import os
import re
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

import tilewise
from copy_baseline import NT_THRESHOLD, StreamingCopy
from tilewise.layout.pack import pack_reference

SIZES = [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]
QUICK_SIZES = [64 << 10, 1 << 20, 16 << 20]
TILES = [(8, 8), (16, 32), (32, 32), (16, 2), (64, 64)]
QUICK_TILES = [(16, 32), (16, 2)]
DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "i8": np.int8}
NCHWC = "NCHW16c"


@dataclass(frozen=True)
class Layout:
    """A packing: ``label`` for the table, the unpacked ``shape`` and the pack attributes."""

    label: str
    shape: tuple[int, ...]
    pos: tuple[int, ...]
    tiles: tuple[int, ...]


def _layouts(nbytes: int, itemsize: int, tiles_list) -> list[Layout]:
    """The 2-D tilings and the NCHWc pack of a tensor of ``nbytes`` bytes."""
    n = nbytes // itemsize
    rows = 1 << (n.bit_length() - 1) // 2
    out = [Layout(f"T({a},{b})", (rows, n // rows), (0, 1), (a, b)) for a, b in tiles_list]
    hw = n // 64
    h = 1 << (hw.bit_length() - 1) // 2
    out.append(Layout(NCHWC, (1, 64, h, hw // h), (1,), (16,)))
    return out


@dataclass(frozen=True)
class Only:
    """A sweep filter: the cells whose size, dtype, layout and op are each in the given set
    (an empty set admits every value)."""

    sizes: frozenset = frozenset()
    dtypes: frozenset = frozenset()
    layouts: frozenset = frozenset()
    ops: frozenset = frozenset()

    def __bool__(self) -> bool:
        return bool(self.sizes or self.dtypes or self.layouts or self.ops)

    def admits(self, key: str, value) -> bool:
        allowed = getattr(self, key)
        return not allowed or value in allowed


_ONLY_KEYS = {"size": "sizes", "dtype": "dtypes", "layout": "layouts", "op": "ops"}


def parse_only(text: str) -> Only:
    """``--only 'size=64K,4M dtype=i8 layout=T(16,32),NCHW16c op=unpack'`` as an ``Only``;
    sizes as the table prints them (64K, 4M)."""
    fields = {}
    for part in text.split():
        key, _, values = part.partition("=")
        if key not in _ONLY_KEYS or not values:
            raise SystemExit(f"--only: bad filter {part!r}; use size=, dtype=, layout=, op= "
                             f"with comma-separated values")
        vals = re.findall(r"[^,(]+(?:\([^)]*\))?", values)  # T(16,32) keeps its comma
        fields[_ONLY_KEYS[key]] = frozenset(vals)
    return Only(**fields)


def _rounds(nbytes: int, quick: bool, rounds: int | None) -> int:
    if rounds:
        return rounds
    if quick:
        return 3
    return 21 if nbytes <= 1 << 20 else 11 if nbytes <= 16 << 20 else 7 if nbytes <= 64 << 20 else 5


_SCRATCH = np.zeros(4 << 20, dtype=np.uint8)


def _evict() -> None:
    _SCRATCH.view(np.uint64)[::8] += 1  # one store per 64-byte line, as the child does


def _timed(f) -> float:
    _evict()
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def _cell(op: str, x: np.ndarray, packed: np.ndarray, lay: Layout, stream: StreamingCopy,
          rounds: int) -> dict:
    """Time one op on one layout interleaved with both copies; check the result. The order
    rotates round by round: a call right after the streaming child's reply (a pipe read
    that wakes this process) runs about 1 us slower at 64 KiB, for every candidate."""
    src, want = (x, packed) if op == "pack" else (packed, x)
    out = np.empty_like(want)
    if op == "pack":
        run = lambda: tilewise.pack(x, lay.pos, lay.tiles, out=out)  # noqa: E731
    else:
        run = lambda: tilewise.unpack(packed, lay.pos, lay.tiles, shape=x.shape, out=out)  # noqa: E731
    mem_src = src.reshape(-1)
    mem_dst = np.empty_like(mem_src)
    copy = lambda: np.copyto(mem_dst, mem_src)  # noqa: E731
    for f in (run, run, copy, copy):  # warm up: JIT, page faults
        f()
    if not np.array_equal(out.view(np.uint8), want.view(np.uint8)):
        raise AssertionError(f"{op} {lay.label} {x.dtype} {x.shape}: wrong bytes")
    timers = {"copyto": lambda: _timed(copy), "stream": stream.time,
              "tilewise": lambda: _timed(run)}
    order = list(timers)
    times = {k: [] for k in order}
    for r in range(rounds):  # each candidate first, second and third in turn (see _cell)
        for k in order[r % 3:] + order[:r % 3]:
            times[k].append(timers[k]())
    t = {k: np.array(v) for k, v in times.items()}
    return dict(seconds={k: float(np.median(v)) for k, v in t.items()},
                gb_per_s={k: x.nbytes / float(np.median(v)) / 1e9 for k, v in t.items()},
                ratio_to_copyto=float(np.median(t["copyto"] / t["tilewise"])),
                ratio_to_fastest=float(np.median(np.minimum(t["copyto"], t["stream"])
                                                 / t["tilewise"])),
                rounds=rounds)


def _size(nbytes: int) -> str:
    return f"{nbytes >> 20}M" if nbytes >= 1 << 20 else f"{nbytes >> 10}K"


@dataclass(frozen=True)
class Cell:
    """One tensor of the sweep: ``nbytes`` of dtype ``dtype`` (labelled ``dt``) in ``layout``."""

    nbytes: int
    dt: str
    dtype: type
    layout: Layout

    def tensors(self) -> tuple[np.ndarray, np.ndarray]:
        """The unpacked tensor (random bytes, the same every run) and its packed form."""
        raw = np.random.default_rng(0).bytes(self.nbytes)
        x = np.frombuffer(raw, np.uint8).view(self.dtype).reshape(self.layout.shape).copy()
        return x, pack_reference(x, self.layout.pos, self.layout.tiles)


def cells(only: Only, quick: bool = False):
    """The sweep's cells in order (sizes, then dtypes, then layouts), as ``only`` admits them."""
    for nbytes in QUICK_SIZES if quick else SIZES:
        if not only.admits("sizes", _size(nbytes)):
            continue
        for dt, dtype in DTYPES.items():
            if not only.admits("dtypes", dt):
                continue
            for lay in _layouts(nbytes, np.dtype(dtype).itemsize,
                                QUICK_TILES if quick else TILES):
                if only.admits("layouts", lay.label):
                    yield Cell(nbytes, dt, dtype, lay)


def print_summary(rows: list[dict]) -> None:
    """Markdown tables of the ratios to the fastest copy per size and per layout (median,
    min, max, cells at 0.7 or more), and packs / unpacks at 0.7 or more."""
    for title, key in (("size", lambda r: _size(r["bytes"])), ("layout", lambda r: r["layout"])):
        groups: dict = {}
        for r in rows:
            groups.setdefault(key(r), []).append(r["ratio_to_fastest"])
        print(f"\n| {title} | median | min | max | cells >= 0.7 |\n|---|---:|---:|---:|---:|")
        for name, v in groups.items():
            v = np.array(v)
            print(f"| {name} | {np.median(v):.2f} | {v.min():.2f} | {v.max():.2f} | "
                  f"{int((v >= 0.7).sum())}/{len(v)} |")
    for op in ("pack", "unpack"):
        v = [r["ratio_to_fastest"] for r in rows if r["op"] == op]
        print(f"{op}: {sum(x >= 0.7 for x in v)} of {len(v)} cells at 0.7 or more")
    print()


def sweep(quick: bool, rounds: int | None, out: str | None, only: Only = Only()) -> None:
    """Run every cell (``only``'s with a filter), print the table, write the JSON (a filtered
    run only to an explicit ``out``)."""
    if not only:
        out = out or str(Path(__file__).parent / "results" / "pack_sweep.json")
    load_before = os.getloadavg()
    stream = StreamingCopy()
    rows = []
    print(f"{'op':6} {'dtype':4} {'size':>5} {'shape':>14} {'tile':>8} {'copyto':>6} "
          f"{'stream':>6} {'tilew':>6}  {'/copyto':>7} {'/fastest':>8}   (GB/s, medians)")
    try:
        for cell in cells(only, quick):
            if stream.nbytes != cell.nbytes:
                stream.alloc(cell.nbytes)
            x, packed = cell.tensors()
            lay, dt, nbytes = cell.layout, cell.dt, cell.nbytes
            for op in ("pack", "unpack"):
                if not only.admits("ops", op):
                    continue
                res = _cell(op, x, packed, lay, stream, _rounds(nbytes, quick, rounds))
                rows.append(dict(op=op, dtype=dt, bytes=nbytes, shape=list(lay.shape),
                                 layout=lay.label, inner_dims_pos=list(lay.pos),
                                 inner_tiles=list(lay.tiles), **res))
                g = res["gb_per_s"]
                print(f"{op:6} {dt:4} {_size(nbytes):>5} {'x'.join(map(str, lay.shape)):>14}"
                      f" {lay.label:>8} {g['copyto']:6.1f} {g['stream']:6.1f} "
                      f"{g['tilewise']:6.1f}  {res['ratio_to_copyto']:7.2f} "
                      f"{res['ratio_to_fastest']:8.2f}", flush=True)
            del x, packed
    finally:
        stream.close()
    if not rows:
        raise SystemExit("--only matched no cell")
    print_summary(rows)
    worst = min(rows, key=lambda r: r["ratio_to_fastest"])
    below = [r for r in rows if r["ratio_to_fastest"] < 0.7]
    print(f"{len(rows)} cells; {len(below)} below 0.7 of the fastest copy; worst "
          f"{worst['ratio_to_fastest']:.2f} ({worst['op']} {worst['dtype']} "
          f"{_size(worst['bytes'])} {worst['layout']}); load average "
          f"{load_before[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    meta = dict(machine=platform.machine(), cpus=os.cpu_count(), numpy=np.__version__,
                threads=1, load_average_before=load_before, load_average_after=os.getloadavg(),
                quick=quick, streaming_threshold_bytes=NT_THRESHOLD,
                note="single thread everywhere; GB/s = unpacked bytes / time; 4 MiB evicted "
                     "before every timed call; ratios are per-round medians")
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(dict(meta=meta, rows=rows), indent=1) + "\n")
        print(f"wrote {out}")
