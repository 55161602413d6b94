"""Execute a mapping numerically by following the one loop-nest walker, and verify it.

``execute(workload, mapping, inputs=None, seed=0, arch=...)`` replays the events of
:func:`tilewise.simulation.walker.walk` — the very events :func:`tilewise.simulate` counts — with
real numpy tiles:

- the outermost level holds the whole input arrays and the outputs (zeros at the start);
- ``load``/``reload`` copies the tile's box out of the nearest level above that keeps the
  tensor (its resident buffer must contain the box) into a buffer of this level and instance
  (the logical memory above the array, one buffer per core at the array); ``zero`` starts an
  output tile at 0; ``store`` writes the tile back into the parent's resident tile, cast to the
  tensor's dtype there (the innermost level holds an op's output in its accumulator type, i32
  or f32). Partial sums of one tile held by several cores (a reduction split over the array)
  are summed into the parent, each core adding what it accumulated since its last store;
  attention's partial states (its keys split over cores) are merged into the parent tile by
  seed 003's Eq. 12 and divided by the merged denominator once, at the end; LayerNorm's
  statistics of a row tile split over cores merge (Chan) before the normalize pass;
- buffers are allocated at first use with the model's byte count (full tile, rounded to blocks
  and whole banks, x2 when double-buffered, accumulator types in the innermost level; see
  :mod:`tilewise.model.footprint`) and live to the end; the allocation that would take a level
  instance past its capacity raises CapacityError naming the level, the tensors and the bytes;
- each ``Compute`` event runs one tile kernel on the core's resident tiles: ``mac`` with
  :func:`~tilewise.tiles.kernels.einsum_tile` (int8/int16 -> int32, 16-bit floats -> f32) or
  :func:`~tilewise.tiles.kernels.conv_tile` on the halo tile of a convolution input (zero
  outside the tensor); ``softmax`` with :func:`~tilewise.tiles.kernels.online_softmax` (causal
  and bool masks, a fully masked row gives 0), its consumer rescaled by alpha and divided by
  the denominator once its reduction over the keys is complete; ``norm`` merging Welford
  triples of column tiles (:func:`~tilewise.tiles.layernorm.merge_moments`) and
  ``elementwise`` with :func:`~tilewise.tiles.layernorm.normalize_tile`.
  Fused intermediates (C of a GEMM chain, S and P of attention, LayerNorm's statistics) exist
  only in the innermost level: the walker never moves them and no outer buffer is ever created
  for them. As on the core, each keeps one array per core that later tiles reuse (the first
  contribution to a new tile overwrites it: no zero fill), and attention's P is computed in
  S's array (the model gives P no buffer of its own).

Example (an int8 GEMM, K split at the memtile, on the seed's 4x2 AIE array)::

    >>> from tilewise import gemm, Mapping
    >>> w = gemm(40, 48, 32)
    >>> m = Mapping.parse("ddr[m40 n48 k32] mnk | memtile[m32 n32 k16] kmn db:A | "
    ...                   "core[m16 n8 k16] db:A,B ; rows=n4 cols=m2")
    >>> out = execute(w, m, seed=1, arch="aie-4x2")
    >>> out["C"].dtype.name, out["C"].shape
    ('int32', (40, 48))
    >>> print(verify(w, m, seed=1, arch="aie-4x2"))
    C i32 (40, 48): max abs error 0, max rel error 0 (exact) PASS

``verify`` runs both ``execute`` and :func:`tilewise.reference` and reports the max error per
output against a tolerance (exact for integer outputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..errors import CapacityError, MappingError, WorkloadError
from ..model.legality import merged_ways, ways_of
from ..model.footprint import in_place
from ..layout.pack import pack, unpack
from ..model.problem import Problem
from ..tiles.kernels import conv_tile, einsum_tile, merge_softmax, online_softmax, read_tile
from ..tiles.layernorm import Moments, merge_moments, normalize_tile, tile_moments
from .reference import (array_shape, check_inputs, check_supported, gather, input_tensors,
                        letters, normalization, output_tensors, random_inputs, reference,
                        visibility)
from ..simulation.walker import Compute, kept_tensors, tensor_box, walk


# --------------------------------------------------------------------------- public API


# The tile-by-tile executor runs about 0.4 ms per core tile (i8 gemm 4096^3 on aie-4x2, core
# tiles m64 n32 k256: 17,000 tiles in 6.5 s on the 2-core VM). The CLI refuses more than
# these without --force: about 100 s of tiles, or operands that do not fit in memory twice.
MAX_RUN_TILES = 250_000
MAX_RUN_BYTES = 2 << 30
SECONDS_PER_TILE = 0.4e-3


@dataclass(frozen=True)
class RunSize:
    """What an execution costs: core ``tiles`` computed (None: unknown, see
    :func:`compute_tiles`), operand ``bytes`` held (inputs and outputs, each once), and the
    estimated ``seconds`` (``SECONDS_PER_TILE`` a tile)."""

    tiles: int | None
    bytes: int

    @property
    def seconds(self) -> float:
        return (self.tiles or 0) * SECONDS_PER_TILE

    def refusal(self) -> str | None:
        """Why the CLI refuses this run without --force (None: it does not)."""
        if self.tiles is not None and self.tiles > MAX_RUN_TILES:
            return (f"{self.tiles:,} core tiles (about {_duration(self.seconds)} at "
                    f"{SECONDS_PER_TILE * 1e3:.1f} ms a tile) is above the limit of "
                    f"{MAX_RUN_TILES:,} tiles")
        if self.bytes > MAX_RUN_BYTES:
            return (f"operands of {self.bytes / 2**30:,.1f} GiB are above the limit of "
                    f"{MAX_RUN_BYTES / 2**30:.0f} GiB")
        return None


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.0f} {unit}"
    return f"{seconds:.0f} s"


def run_size(workload, mapping, arch=None) -> RunSize:
    """The :class:`RunSize` of executing ``mapping`` of ``workload`` on ``arch``."""
    tensors = {t.name: t for t in (*input_tensors(workload), *output_tensors(workload))}
    nbytes = sum(math.prod(t.shape) * t.dtype.bytes for t in tensors.values())
    return RunSize(compute_tiles(workload, mapping, arch), nbytes)


def compute_tiles(workload, mapping, arch=None) -> int | None:
    """How many core tiles an execution computes (its Compute events; an upper bound where
    cores get unequal shares): the busiest core's kernel calls (the cost model's steps) times
    the cores the spatial split uses. None when the cost model cannot price the workload on
    ``arch`` (no compute rate for its dtype: the executor does not need one)."""
    from ..errors import TilewiseError
    from ..model.cost import evaluate

    arch, mapping = resolve(workload, mapping, arch)
    cores = math.prod(s.ways for s in (mapping.rows, mapping.cols) if s)
    try:  # capacity unchecked: the executor names the buffer that does not fit
        steps = evaluate(workload, arch, mapping, check_capacity=False).steps
    except TilewiseError:
        return None
    return int(sum(steps.values())) * cores


def execute(workload, mapping, inputs=None, seed: int = 0, *, arch=None,
            progress=None) -> dict[str, np.ndarray]:
    """Run ``mapping`` of ``workload`` tile by tile on ``arch``; the final outputs by name.

    ``mapping``: a :class:`~tilewise.mapping.Mapping` or its text form. ``inputs``: name -> array
    for every input tensor (converted to the tensor's dtype); None draws them from ``seed``
    (:func:`~tilewise.executor.reference.random_inputs`). ``arch``: an Arch or a preset name;
    None picks the one shipped preset whose level names match the mapping (MappingError if
    several or none do). Raises CapacityError when a buffer would exceed a level's capacity.
    ``progress(done)``, when given, is called with the core tiles computed so far (of about
    :func:`compute_tiles`).
    """
    arch, mapping = resolve(workload, mapping, arch)
    check_supported(workload)
    data = check_inputs(workload, random_inputs(workload, seed) if inputs is None else inputs)
    return _Executor(workload, arch, mapping, data).run(progress)


@dataclass(frozen=True)
class OutputCheck:
    """Error of one output against the reference. ``max_abs``: max |executed - reference|
    (in the output's units); ``max_rel``: max_abs / max |reference| (max_abs when the reference
    is all 0);
    ``tolerance``: the bound on max_rel (0: exact)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    tolerance: float

    @property
    def passed(self) -> bool:
        return bool(self.max_rel <= self.tolerance)  # False for NaN

    def __str__(self) -> str:
        tol = "exact" if self.tolerance == 0 else f"tolerance {self.tolerance:.1e}"
        return (f"{self.name} {self.dtype} {self.shape}: max abs error {self.max_abs:.3g}, "
                f"max rel error {self.max_rel:.3g} ({tol}) {'PASS' if self.passed else 'FAIL'}")


@dataclass(frozen=True)
class VerifyReport:
    """``execute`` against ``reference`` on the same inputs: one check per final output."""

    outputs: tuple[OutputCheck, ...]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    def __str__(self) -> str:
        return "\n".join(map(str, self.outputs))


def verify(workload, mapping, inputs=None, seed: int = 0, *, arch=None,
           progress=None) -> VerifyReport:
    """Execute ``mapping`` and compare every output with :func:`reference` on the same inputs
    (``progress`` as in :func:`execute`).

    Integer outputs must be equal. Float outputs pass when max |x - ref| / max |ref| is at
    most :func:`tolerance` (a few units of the lowest precision any value is rounded to).
    """
    arch, mapping = resolve(workload, mapping, arch)
    check_supported(workload)
    data = check_inputs(workload, random_inputs(workload, seed) if inputs is None else inputs)
    return compare(workload, execute(workload, mapping, data, arch=arch, progress=progress),
                   reference(workload, data), magnitude(workload, data))


def magnitude(workload, data: dict) -> dict | None:
    """For a chain of multiply-accumulates only: the reference on the inputs' absolute values,
    i.e. per output element the sum of |products| through the chain, the scale a float dot
    product's rounding error is bounded by (|error| <= n eps sum |a||b|; a result that
    cancels to near 0 is not held to its own tiny magnitude). None for other ops."""
    if any(op.kind not in ("mac", "softmax") for op in workload.ops):
        return None
    if any(t.dtype.is_integer or t.dtype.kind == "bool" for t in input_tensors(workload)):
        return None
    return reference(workload, {k: np.abs(v) if k in _mixed(workload) else v
                                for k, v in data.items()})


def _mixed(workload) -> set[str]:
    """The inputs whose absolute values give the error scale: every input of a plain chain of
    multiply-accumulates; with a softmax, the operands that its probabilities weigh (attention's
    V: ``O = P·V`` with ``P >= 0`` is a convex combination, its error bounded by ``P·|V|``, not
    by a result that cancels), the scores' inputs kept as they are (``|Q|·|K|`` would be other
    probabilities)."""
    soft = {op.output.name for op in workload.ops if op.kind == "softmax"}
    if not soft:
        return {t.name for t in input_tensors(workload)}
    return {t.name for op in workload.ops if op.kind == "mac"
            and any(x.name in soft for x in op.inputs) for t in op.inputs if t.name not in soft}


def compare(workload, got: dict, want: dict, scale_ref: dict | None = None) -> VerifyReport:
    """Every final output of ``got`` against ``want`` (name -> array): integers exact, floats
    within :func:`tolerance` relative to max |reference| (or, given ``scale_ref``, max of
    :func:`magnitude`'s output, which is never smaller)."""
    checks = []
    for t in output_tensors(workload):
        x, r = got[t.name].astype(np.float64), want[t.name].astype(np.float64)
        with np.errstate(invalid="ignore"):
            err = float(np.abs(x - r).max()) if r.size else 0.0
        m = r if scale_ref is None else np.maximum(np.abs(r), np.abs(scale_ref[t.name].astype(np.float64)))
        scale = float(np.abs(m).max()) if r.size else 0.0
        checks.append(OutputCheck(t.name, t.dtype.name, r.shape, err, err / scale if scale else err,
                                  tolerance(workload, t)))
    return VerifyReport(tuple(checks))


def tolerance(workload, t) -> float:
    """Relative tolerance of output ``t`` (0 for integers): 4 units of the coarsest float type a
    result is rounded to on the way (the output, intermediates such as attention's P), one
    unit of the accumulator per sqrt(term) of the longest reduction (f32 sums of many terms),
    and two units per step of a softmax's running rescale: a blocked softmax (one key tile at
    a time) multiplies its running sum and output by ``exp(m_old - m_new)`` once per tile,
    each a rounded exp and a rounded product, so its error grows linearly with the key count
    (attention f32 with 9 one-key tiles: 1.09e-6, over the 8.3e-7 that left this term out)."""
    if t.dtype.is_integer:
        return 0.0
    inter = {x.name for x in workload.intermediates}
    stored = [t.dtype] + [op.output.dtype for op in workload.ops
                          if op.output.name in inter and not op.output.dtype.is_integer]
    accs = [op.accumulator for op in workload.ops if not op.accumulator.is_integer] or [t.dtype]
    longest = max(int(np.prod([workload.sizes[d] for d in op.reduction_dims] or [1]))
                  for op in workload.ops)
    rescales = max((workload.sizes[op.attrs["along"]] for op in workload.ops
                    if op.kind == "softmax"), default=0)
    eps = (lambda types: max(float(ml_dtypes.finfo(d.numpy).eps) for d in types))
    return 4 * eps(stored) + eps(accs) * (float(np.sqrt(longest)) + 2 * rescales)


def resolve(workload, mapping, arch):
    """(Arch, Mapping) from an Arch / preset name / YAML path / None (the preset whose levels
    the mapping names) and a Mapping / its text; validated by the model's rules."""
    from ..arch.loader import load_arch, preset_names
    from ..mapping import as_mapping
    from ..model.legality import validate

    mapping = as_mapping(mapping)
    if arch is None:
        names = [lv.level for lv in mapping.levels]
        hits = [p for p in preset_names() if [lv.name for lv in load_arch(p).levels] == names]
        if len(hits) != 1:
            raise MappingError(f"mapping levels {', '.join(names)} match "
                               + (f"the presets {', '.join(hits)}" if hits else "no preset")
                               + "; pass arch= (an Arch, a preset name or a YAML path)")
        arch = hits[0]
    arch = load_arch(arch)
    validate(workload, arch, mapping)
    return arch, mapping


# --------------------------------------------------------------------------- the executor


class _Buffer:
    """A resident tile: identity (dim ranges), box (per axis [lo, hi)), the data, and for a
    partial sum shared by a column of cores the value it started from (to sum deltas)."""

    __slots__ = ("ident", "box", "data", "start")

    def __init__(self, ident, box, data, start=None):
        self.ident, self.box, self.data, self.start = ident, box, data, start

    def region(self, box) -> tuple:
        """Index of ``box`` inside this buffer; MappingError (an executor invariant) if outside."""
        if any(lo < blo or hi > bhi for (lo, hi), (blo, bhi) in zip(box, self.box) if hi > lo):
            raise MappingError(f"internal: tile box {box} is not inside the resident box {self.box}")
        return tuple(slice(lo - blo, hi - blo) for (lo, hi), (blo, _) in zip(box, self.box))


class _PackedBuffer(_Buffer):
    """A tensor stored packed at the outermost level (``pack:`` in the mapping): the data is
    :func:`tilewise.layout.pack.pack`'s result (``inner_tiles`` = ``tiles``, the tensor's tile
    at the first level below that keeps it, padded with zeros); a box is one pack tile."""

    __slots__ = ("tiles",)

    def __init__(self, shape, data, tiles):
        super().__init__(None, tuple((0, n) for n in shape), data)
        self.tiles = tiles

    def region(self, box) -> tuple:
        """The pack tile holding ``box`` (its outer indices, then the real extents in it)."""
        outer, inner = [], []
        for (lo, hi), t in zip(box, self.tiles):
            if hi > lo and (lo % t or hi - lo > t):
                raise MappingError(f"internal: tile box {box} is not one pack tile of {self.tiles}")
            outer.append(lo // t)
            inner.append(slice(0, hi - lo))
        return tuple(outer) + tuple(inner)

    def unpacked(self) -> np.ndarray:
        return unpack(self.data, tuple(range(len(self.tiles))), self.tiles,
                      shape=tuple(hi for _, hi in self.box))


class _Executor:
    def __init__(self, workload, arch, mapping, inputs):
        self.w, self.arch, self.m = workload, arch, mapping
        self.problem = Problem.build(workload, arch)
        self.st = self.problem.st
        self.n = self.st.n_levels
        self.a = self.st.array_level if self.st.array_level is not None else self.n - 1
        self.ops = {op.name: op for op in workload.ops}
        # dims computed once (Tensor.dims / Op.dims / Chain.spine are derived properties)
        self.dims = {t.name: t.dims for op in workload.ops for t in op.tensors + op.state}
        self.op_dims = {op.name: op.dims for op in workload.ops}
        self.op_tensors = {op.name: op.tensors + op.state for op in workload.ops}
        self.spine = tuple(workload.spine)
        self.inter = self.st.intermediate_names
        self.shared = in_place(workload)
        self.tiles = [lv.sizes for lv in mapping.levels]
        self.ways = merged_ways(mapping, arch)  # the partial-sum width rule's view
        # the fused intermediates' live panel (the model's rule, from the loop orders)
        self.panel = self.problem.panel(self.tiles, [lv.order for lv in mapping.levels[:-1]],
                                        ways_of(mapping))
        self.kept = kept_tensors(self.st, mapping)
        self.split_reduction = {op.output.name for op in workload.ops
                                if any(sp and sp.dim in op.reduction_dims
                                       for sp in (mapping.rows, mapping.cols))}
        # attention outputs whose keys are split over cores: output -> the softmax rescaling it
        self.key_split = {op.output.name: op.attrs["online_rescale"] for op in workload.ops
                          if op.output.name in self.split_reduction and "online_rescale" in op.attrs}
        self.merged: dict = {}      # (output, level, instance, identity, value box) -> [max,
        #                             denom, box] of the parent tile the cores' partials merge into
        self.stored: dict = {}      # (core, identity) -> (max, denom) this core merged already
        self.snapshot: dict = {}    # (core, identity) -> (max, denom) its numerator is scaled by
        # statistics whose reduction is split over cores (LayerNorm's c): merged per row tile
        self.moments_split = {op.output.name for op in workload.ops
                              if op.kind == "norm" and op.output.name in self.split_reduction}
        self.moments: dict = {}     # (statistics, identity) -> Moments merged over the cores
        self.allocated: dict = {}   # (level, instance) -> {tensor: bytes}
        self.buffers: dict = {}     # (level, instance, tensor) -> _Buffer
        self.fused: dict = {}       # (core, tensor) -> (identity, array or Moments)
        self.storage: dict = {}     # (core, tensor) -> the array a fused tile last lived in
        self.fresh = None           # (core, tensor) of the fused tile _fused just created
        self.point = 0              # the point of the shared loops the current step runs under
        self.panels: dict = {}      # (core, tensor) -> (point, {identity: array}): a chain of
        #                             GEMMs keeps every tile of one shared point (its panel)
        self.spare: dict = {}       # (core, tensor) -> arrays of an older panel, for reuse
        self.conv: dict = {}        # op -> _conv_form(op)
        self.specs: dict = {}       # op -> einsum spec of its mac tile
        self.state: dict = {}       # core -> (rows identity, max, denom) resident softmax state
        self.spilled: dict = {}     # (core, rows identity) -> (max, denom) of evicted rows
        self.alpha: dict = {}       # (core, softmax op) -> rescale factors of this step
        self.covered: dict = {}     # (core, output, identity) -> reduction points summed (a
        #                             bias: (output, identity), over every core)
        for t in self.st.moved:
            self._allocate(0, None, t)
            shape = array_shape(t)
            data = inputs[t.name] if t.name in inputs else np.zeros(shape, self._dtype(0, t))
            if t.name in mapping.levels[0].pack:
                self.buffers[(0, None, t.name)] = self._packed(t, data)
            else:
                self.buffers[(0, None, t.name)] = _Buffer(None, tuple((0, s) for s in t.shape), data)

    def run(self, progress=None) -> dict[str, np.ndarray]:
        done = 0
        for ev in walk(self.w, self.arch, self.m):
            if isinstance(ev, Compute):
                self._compute(ev)
                done += 1
                if progress is not None and done % 64 == 0:
                    progress(done)
            else:
                self._transfer(ev)
        if progress is not None:
            progress(done)
        # the one conversion of each output, from its accumulator: integers saturate
        self._normalize_merged()
        out = {}
        for t in output_tensors(self.w):
            buf = self.buffers[(0, None, t.name)]
            data = buf.unpacked() if isinstance(buf, _PackedBuffer) else buf.data
            out[t.name] = t.dtype.convert(data)
        return out

    def _packed(self, t, data) -> _PackedBuffer:
        """``t`` packed by its tile at the first level below the outermost that keeps it
        (clipped to the tensor), zero padded: a real ``linalg.pack``."""
        c0 = next((l for l in range(1, self.n) if t.name in self.kept[l]), self.n - 1)
        tiles = tuple(min(self.tiles[c0][ax.dims[0]], n) for ax, n in zip(t.axes, t.shape))
        packed = pack(np.ascontiguousarray(data), tuple(range(len(tiles))), tiles,
                      padding_value=0)
        return _PackedBuffer(t.shape, packed, tiles)

    # ----- memory

    def _allocate(self, level: int, inst, t) -> None:
        buf = self.allocated.setdefault((level, inst), {})
        if t.name in buf or t.name in self.shared:
            return
        lv = self.arch.levels[level]
        db = t.name in self.m.levels[level].double_buffer
        buf[t.name] = self.problem.buffer_bytes(t.name, level, self.tiles, self.ways, db,
                                                panel=self.panel)
        # the model's rule (per instance below the array), per part of the level
        part = self.problem.buffer_part(t.name, level)
        cap = self.problem.levels.part_cap[level, part]
        if not np.isfinite(cap):
            return
        cap = int(cap)
        need = self._need(buf, level, part)
        if need > cap:
            where = f"level {lv.name}" + (f" (core {inst})" if inst is not None and self.arch.array else "")
            if lv.reserved:
                where += (" (shared part)" if part == 0 else
                          f" (the part reserved for {lv.reserved[part - 1][0]})")
            held = ", ".join(f"{k} {v}" + (" (double-buffered)" if k in self.m.levels[level].double_buffer
                                           else "") for k, v in buf.items())
            raise CapacityError(f"{where}: allocating {t.name} ({buf[t.name]} bytes) needs {need} bytes "
                                f"but it holds {cap}; buffers: {held}")

    def _need(self, buf: dict, level: int, part: int) -> int:
        """Bytes the buffers ``buf`` of one instance take in ``part`` of ``level``: their sum,
        or for ``memory="max"`` (:attr:`.Chain.memory`) the max over ops of the buffers each
        op touches (the model's :func:`.kernel._fit`)."""
        mine = {k: v for k, v in buf.items() if self.problem.buffer_part(k, level) == part}
        if self.w.memory != "max":
            return sum(mine.values())
        return max(sum(v for k, v in mine.items() if any(t.name == k for t in ts))
                   for ts in self.op_tensors.values())

    def _dtype(self, level: int, t) -> np.dtype:
        """Element type of ``t``'s buffer at ``level``: an op's accumulator in the innermost,
        and for a final output of a reduction at every level (its partial sums are stored and
        reloaded as accumulators; :meth:`run` converts the result once, saturating)."""
        op = self.w.producer(t.name)
        if op is not None and op.kind in ("mac", "norm") and (
                level == self.n - 1 or t.name in self.st.outputs):
            return op.accumulator.numpy
        return t.dtype.numpy

    def _source(self, level: int, t, core):
        """The resident buffer of the nearest level above ``level`` that keeps ``t``."""
        j = max(l for l in range(level) if t.name in self.kept[l])
        return self.buffers[(j, core if j >= self.a else None, t.name)]

    def _transfer(self, ev) -> None:
        if ev.tensor in self.inter:  # fused: produced and consumed in the core, never moved
            raise MappingError(f"internal: the walker moved fused intermediate {ev.tensor}")
        t = self.w.tensor(ev.tensor)
        self._allocate(ev.level, ev.core, t)
        key = (ev.level, ev.core, ev.tensor)
        shape = tuple(hi - lo for lo, hi in ev.box) + array_shape(t)[len(t.shape):]
        dt = self._dtype(ev.level, t)
        if ev.kind == "store":
            buf = self.buffers[key]
            if buf.ident != ev.tile:
                raise MappingError(f"internal: store of {t.name} tile {ev.tile} but {buf.ident} is resident")
            parent = self._source(ev.level, t, ev.core)
            region = parent.region(ev.box)
            if t.name in self.key_split and ev.level >= self.a:
                self._merge_partial(ev, t, buf, parent)
            elif buf.start is not None:  # partial sums of a column of cores: add this core's part
                acc = parent.data[region].astype(buf.data.dtype) + (buf.data - buf.start)
                parent.data[region] = acc.astype(parent.data.dtype)
            else:
                parent.data[region] = buf.data.astype(parent.data.dtype)
            return
        if ev.kind == "zero" or (ev.tensor in self.key_split and ev.level >= self.a):
            data = np.zeros(shape, dt)  # a core's partial numerator starts anew (merged on store)
        else:
            parent = self._source(ev.level, t, ev.core)
            data = parent.data[parent.region(ev.box)].astype(dt, copy=True)
        start = (data.copy() if ev.tensor in self.split_reduction - self.key_split.keys()
                 and ev.level >= self.a else None)
        self.buffers[key] = _Buffer(ev.tile, ev.box, data, start)

    # ----- compute

    def _compute(self, ev) -> None:
        op = self.ops[ev.op]
        self.point = ev.shared
        r = {d: ev.ranges[d] for d in self.op_dims[op.name]}
        if any(hi <= lo for lo, hi in r.values()):
            return  # an idle core (empty slice of a partial array tile)
        for t in self.op_tensors[op.name]:
            if t.name in self.inter or t in op.state:
                self._allocate(self.n - 1, ev.core, t)
        getattr(self, "_" + op.kind)(op, ev.core, r)

    def _resident(self, t, core, r) -> _Buffer:
        """The buffer compute reads ``t``'s tile over ranges ``r`` from: the innermost level's
        resident tile, or where the innermost level does not keep ``t`` (``Level.holds``) the
        nearest level above that does (its resident tile contains the box)."""
        if t.name not in self.kept[self.n - 1]:
            return self._source(self.n - 1, t, core)
        buf = self.buffers[(self.n - 1, core, t.name)]
        if buf.ident != tuple(r[d] for d in self.dims[t.name]):
            raise MappingError(f"internal: {t.name} tile {buf.ident} resident, {r} needed")
        return buf

    def _operand(self, t, core, r) -> np.ndarray:
        """Input tile over the op's ranges, one axis per dim of ``t`` (zero outside the tensor)."""
        if t.name in self.inter:
            return self._fused(t, core, r, create=False)
        buf = self._resident(t, core, r)
        return gather(t, buf.data, r, tuple(lo for lo, _ in buf.box))

    def _fused_ident(self, t, r) -> tuple:
        """Identity of fused ``t``'s tile: the spine point and ``t``'s dim ranges."""
        return tuple(r[d] for d in self.spine if d in r) + tuple(r[d] for d in self.dims[t.name])

    def _fused(self, t, core, r, create: bool, dtype=None, zero: bool = True):
        """The innermost-level tile of fused intermediate ``t`` for this spine point; a fresh
        tile when ``create`` and the spine point changed: zeros, or undefined values when not
        ``zero`` (the caller overwrites it; :attr:`fresh` names it)."""
        if self.st.projected:
            return self._panel_tile(t, core, r, create, dtype, zero)
        ident = self._fused_ident(t, r)
        held = self.fused.get((core, t.name))
        if held is not None and held[0] == ident:
            return held[1]
        if not create:
            raise MappingError(f"internal: {t.name} is read before its producer ran at {r}")
        shape = tuple(r[d][1] - r[d][0] for d in self.dims[t.name]) + array_shape(t)[len(t.shape):]
        # One live tile per core and intermediate (an older one is never read again): reuse its
        # storage, as the core reuses its buffer, instead of allocating a fresh array per step.
        value = self.storage.get((core, t.name))
        if value is not None and value.shape == shape and value.dtype == dtype:
            if zero:
                value.fill(0)
        else:
            value = self.storage[(core, t.name)] = np.zeros(shape, dtype)
        self.fused[(core, t.name)] = (ident, value)
        self.fresh = (core, t.name)
        return value

    def _panel_tile(self, t, core, r, create: bool, dtype, zero: bool):
        """:meth:`_fused` for a chain of GEMMs in any loop order: the tile of ``t`` over ``r``
        in the panel of the current shared point (every tile the producer wrote under it; a
        new point starts an empty panel, its arrays reused)."""
        key = (core, t.name)
        point, panel = self.panels.get(key, (None, None))
        if point != self.point:
            spare = self.spare.setdefault(key, [])
            spare.extend((panel or {}).values())
            panel = {}
            self.panels[key] = (self.point, panel)
        ident = tuple(r[d] for d in self.dims[t.name])
        value = panel.get(ident)
        if value is not None:
            return value
        if not create:
            raise MappingError(f"internal: {t.name} is read before its producer ran at {r}")
        shape = tuple(r[d][1] - r[d][0] for d in self.dims[t.name]) + array_shape(t)[len(t.shape):]
        spare = self.spare.setdefault(key, [])
        i = next((i for i, v in enumerate(spare) if v.shape == shape and v.dtype == dtype), None)
        if i is None:
            value = np.zeros(shape, dtype)
        else:
            value = spare.pop(i)
            if zero:
                value.fill(0)
        panel[ident] = value
        self.fresh = key
        return value

    def _output(self, op, core, r, dtype, zero: bool = True) -> np.ndarray:
        t = op.output
        if t.name in self.inter:
            return self._fused(t, core, r, create=True, dtype=dtype, zero=zero)
        buf = self._resident(t, core, r)
        if t.name not in self.kept[self.n - 1]:  # accumulate in place in the keeping level
            return buf.data[buf.region(tensor_box(t, r))]
        return buf.data

    def _mac(self, op, core, r) -> None:
        self.fresh = None
        conv = self.conv.get(op.name, False)
        if conv is False:
            conv = self.conv[op.name] = _conv_form(op)
        # a new fused tile is written whole by the einsum path (no zero fill); conv adds to it
        acc = self._output(op, core, r, op.accumulator.numpy, zero=conv is not None)
        fresh = self.fresh == (core, op.output.name)  # a new tile: its first contribution
        rescale = op.attrs.get("online_rescale")
        if rescale is not None and not fresh:  # (a new tile is overwritten below)
            acc *= _broadcast(self.alpha[(core, rescale)], self._rows_dims(rescale), op.output.dims)
        if conv is not None:
            (I, W), stride, dilation = op.factors, conv[0], conv[1]
            buf = self._resident(I, core, r)
            origin = [I.axes[i].bounds(r)[0] for i in range(4)]
            extent = [I.axes[i].bounds(r)[1] - origin[i] + 1 for i in range(4)]
            x = read_tile(buf.data, tuple(o - lo for o, (lo, _) in zip(origin, buf.box)), tuple(extent))
            conv_tile(acc, x, self._operand(W, core, r), stride, dilation)
        else:
            spec = self.specs.get(op.name)
            if spec is None:
                idx = letters(op.dims)
                spec = self.specs[op.name] = (
                    ",".join("".join(idx[d] for d in t.dims) for t in op.factors) + "->"
                    + "".join(idx[d] for d in op.output.dims))
            einsum_tile(spec, acc,
                        *(self._operand(t, core, r) for t in op.factors), overwrite=fresh)
        if op.output.name in self.key_split:  # the state this partial numerator goes with
            _, mx, den = self.state[core]
            self.snapshot[(core, tuple(r[d] for d in op.output.dims))] = (mx.copy(), den.copy())
        elif rescale is not None:
            self._finish_attention(op, core, r, acc, rescale)
        if op.bias is not None:
            self._add_bias(op, core, r, acc)

    def _add_bias(self, op, core, r, acc) -> None:
        """Add the bias to the output tile on the core whose step completes its reduction:
        reduction points are counted per output tile over every core (a reduction split over
        a column of cores completes on one of them; the column's partial sums are then summed
        with the bias in exactly one of them)."""
        key = (op.output.name, tuple(r[d] for d in op.output.dims))
        points = int(np.prod([r[d][1] - r[d][0] for d in op.reduction_dims]))
        self.covered[key] = self.covered.get(key, 0) + points
        if self.covered[key] == int(np.prod([self.w.sizes[d] for d in op.reduction_dims])):
            b = self._operand(op.bias, core, r)
            acc += _broadcast(b.astype(acc.dtype, copy=False), op.bias.dims, op.output.dims)

    def _rows_dims(self, softmax: str) -> tuple:
        sm = self.ops[softmax]
        return tuple(d for d in sm.output.dims if d != sm.attrs["along"])

    def _softmax(self, op, core, r) -> None:
        """One online-softmax step on the resident score tile. When P is computed in place of S
        (:func:`~tilewise.model.footprint.in_place`: the model gives P no buffer of its own) the
        scores are exponentiated in S's array, which then holds P (cast only if P is narrower)."""
        scores_t = next(t for t in op.inputs if t.name in self.inter)
        s = self._operand(scores_t, core, r)
        acc = op.accumulator.numpy
        overwrite = op.output.name in self.shared and s.dtype == acc
        scores = s if overwrite else np.array(s, dtype=acc)
        scale = float(op.attrs.get("scale", 1.0))
        if scale != 1.0:
            scores *= scores.dtype.type(scale)
        masks = [(t, self._operand(t, core, r)) for t in op.inputs if t.name not in self.inter]
        vis = visibility(op, r, masks)
        along = op.output.dims.index(op.attrs["along"])
        last = np.moveaxis(scores, along, -1)  # a view: the kernel works in place
        vis = None if vis is None else np.moveaxis(vis, along, -1)
        row_max, denom = self._state(op, core, r)
        self.alpha[(core, op.name)] = online_softmax(row_max, denom, last, vis)
        ident = self._fused_ident(op.output, r)
        if overwrite:  # S's storage now holds P: S is gone
            del self.fused[(core, scores_t.name)]
        self.fused[(core, op.output.name)] = (ident, scores.astype(op.output.dtype.numpy, copy=False))

    def _state(self, op, core, r):
        """(running max, denominator) of the rows of ``r`` on ``core``; rows evicted earlier (a
        key loop outside a query loop, FlashAttention-1's order) are restored."""
        rows = self._rows_dims(op.name)
        ident = tuple(r[d] for d in rows)
        held = self.state.get(core)
        if held is not None and held[0] == ident:
            return held[1], held[2]
        if held is not None:
            self.spilled[(core, held[0])] = (held[1], held[2])
        shape = tuple(r[d][1] - r[d][0] for d in rows)
        acc = op.accumulator.numpy
        mx, den = self.spilled.pop((core, ident), (np.full(shape, -np.inf, acc), np.zeros(shape, acc)))
        self.state[core] = (ident, mx, den)
        return mx, den

    def _finish_attention(self, op, core, r, acc, softmax: str) -> None:
        """Divide the numerator by the denominator once every key of the rows was folded in."""
        key = (core, op.output.name, tuple(r[d] for d in op.output.dims))
        points = int(np.prod([r[d][1] - r[d][0] for d in op.reduction_dims]))
        self.covered[key] = self.covered.get(key, 0) + points
        if self.covered[key] == int(np.prod([self.w.sizes[d] for d in op.reduction_dims])):
            _, _, denom = self.state[core]
            d = _broadcast(denom, self._rows_dims(softmax), op.output.dims)
            np.divide(acc, d, out=acc, where=d > 0)  # no visible key: N = 0 stays 0

    def _merge_partial(self, ev, t, buf, parent) -> None:
        """Store a core's partial attention state for the keys it saw since its last store of
        this tile, merged (seed 003 Eq. 12, :func:`~tilewise.tiles.kernels.merge_softmax`)
        into the parent tile's (max, denominator, numerator); :meth:`_normalize_merged`
        divides by the merged denominator at the end."""
        rows = self._rows_dims(self.key_split[t.name])
        dims = self.dims[t.name]
        if dims[:len(rows)] != rows:
            raise MappingError(f"internal: {t.name}'s dims {dims} do not start with the rows {rows}")
        state = self.snapshot.pop((ev.core, ev.tile), None)
        if state is None:  # an idle core: its key slice is empty
            return
        mx, den = state
        m0, d0 = self.stored.get((ev.core, ev.tile), (np.full_like(mx, -np.inf), np.zeros_like(den)))
        # the denominator of the keys since the last store, at this state's max (m0 <= mx)
        delta = den - d0 * np.where(np.isneginf(m0), 0, np.exp(m0 - np.where(np.isneginf(mx), 0, mx)))
        self.stored[(ev.core, ev.tile)] = (mx.copy(), den.copy())
        inst = ev.core if ev.level - 1 >= self.a else None
        j = max(l for l in range(ev.level) if t.name in self.kept[l])
        # one merged state per parent tile and value columns (e) of the core's tile: a value
        # dim tiled in the core merges each column tile's own partial states
        cols = ev.box[len(rows):]
        key = (t.name, j, inst, parent.ident, cols)
        if key not in self.merged:
            shape = tuple(hi - lo for lo, hi in parent.box[:len(rows)])
            self.merged[key] = [np.full(shape, -np.inf, mx.dtype), np.zeros(shape, den.dtype),
                                parent.box[:len(rows)] + cols]
        side = self.merged[key]
        region = parent.region(ev.box)
        merge_softmax(side[0][region[:len(rows)]], side[1][region[:len(rows)]],
                      parent.data[region], mx, delta, buf.data)

    def _normalize_merged(self) -> None:
        """``O = N / D`` on every tile whose partial states were merged (D = 0: no visible
        key, O stays 0); the parent tiles' numerators reached the outermost level by stores."""
        for (name, *_), (_, den, box) in self.merged.items():
            out = self.buffers[(0, None, name)].data
            region = tuple(slice(lo, hi) for lo, hi in box)
            d = den.reshape(den.shape + (1,) * (len(box) - den.ndim))
            np.divide(out[region], d, out=out[region], where=d > 0)

    def _merged_moments(self, name: str, ident) -> Moments:
        """The moments of a row tile merged (Chan) over every core that holds a partial of it
        (its columns split over the cores); computed once, when the first core normalizes."""
        merged = self.moments.get((name, ident))
        if merged is None:
            parts = [v[1] for (_, n), v in sorted(self.fused.items(), key=lambda kv: kv[0][0])
                     if n == name and v[0] == ident]
            merged = parts[0]
            for part in parts[1:]:
                merged = merge_moments(merged, part)
            self.moments[(name, ident)] = merged
        return merged

    def _norm(self, op, core, r) -> None:
        (x_t,) = op.inputs
        x = self._operand(x_t, core, r)
        red = [x_t.dims.index(d) for d in op.reduction_dims]
        keep = [i for i in range(x.ndim) if i not in red]
        rows = int(np.prod([x.shape[i] for i in keep]))
        tile = np.transpose(x, keep + red).reshape(rows, -1)
        ident = self._fused_ident(op.output, r)
        held = self.fused.get((core, op.output.name))
        moments = tile_moments(tile)
        if held is not None and held[0] == ident:
            moments = merge_moments(held[1], moments)
        self.fused[(core, op.output.name)] = (ident, moments)

    def _elementwise(self, op, core, r) -> None:
        x_t, stats_t, g_t, b_t, norm = normalization(self.w, op)
        ident = self._fused_ident(stats_t, r)
        held = self.fused.get((core, stats_t.name))
        if held is None or held[0] != ident:
            raise MappingError(f"internal: statistics {stats_t.name} missing for {r}")
        moments: Moments = held[1]
        if stats_t.name in self.moments_split:
            moments = self._merged_moments(stats_t.name, ident)
        x = self._operand(x_t, core, r)
        rows_dims = [d for d in x_t.dims if d in stats_t.dims]
        cols_dims = [d for d in x_t.dims if d not in stats_t.dims]
        perm = [x_t.dims.index(d) for d in rows_dims + cols_dims]
        tile = np.transpose(x, perm)
        shp = tile.shape
        tile = tile.reshape(moments.mean.shape[0], -1)
        g = self._operand(g_t, core, r).reshape(-1)
        b = self._operand(b_t, core, r).reshape(-1)
        y = normalize_tile(tile, moments, g, b, float(norm.attrs.get("eps", 1e-5)),
                           dtype=op.output.dtype.numpy)
        y = np.transpose(y.reshape(shp), np.argsort(perm))
        out = self._output(op, core, r, op.output.dtype.numpy)
        out[...] = np.transpose(y, [x_t.dims.index(d) for d in op.output.dims])


def _broadcast(values: np.ndarray, dims: tuple, out_dims: tuple) -> np.ndarray:
    """``values`` over ``dims`` (a subset of ``out_dims``, same order) with size-1 axes added."""
    return values.reshape(tuple(values.shape[dims.index(d)] if d in dims else 1 for d in out_dims))


def _conv_form(op):
    """((stride), (dilation)) when ``op`` is conv2d's ``O[n,k,p,q] += I[n, c, p*sh + r*dh - ph,
    q*sw + s*dw - pw] * W[k,c,r,s]``, else None (then windows are gathered generically)."""
    if len(op.factors) != 2:
        return None
    I, W = op.factors
    if len(I.axes) != 4 or len(W.axes) != 4 or len(op.output.axes) != 4:
        return None
    if not (I.axes[0].is_plain and I.axes[1].is_plain and all(a.is_plain for a in W.axes)
            and all(a.is_plain for a in op.output.axes)):
        return None
    win = [I.axes[2].terms, I.axes[3].terms]
    if any(len(t) != 2 for t in win):
        return None
    n, c = I.axes[0].dims[0], I.axes[1].dims[0]
    (p, sh), (rr, dh) = win[0]
    (q, sw), (ss, dw) = win[1]
    if W.dims != (op.output.dims[1], c, rr, ss) or op.output.dims != (n, W.dims[0], p, q):
        return None
    return (sh, sw), (dh, dw)
