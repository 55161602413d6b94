"""A tilewise mapping as MLIR that IREE compiles for this CPU: ``tilewise.emit_mlir``.

The module is one ``func.func @main`` taking the inputs and returning the output: a
``linalg.fill`` of zeros and the linalg op of the workload (:mod:`.forms`), the op carrying
``#iree_codegen.compilation_info`` with an ``#iree_cpu.lowering_config`` made of the mapping's
tiles and the pipeline IREE uses for that op (``DoubleTilingExpert`` for contractions,
``ConvTileAndDecomposeExpert`` for convolutions). Without a mapping the op carries nothing and
IREE picks its own tiling (the default the benchmarks compare against).

Levels (:func:`lowering_config`; docs/usage/iree.md):

- ``distribution`` (one workgroup, run by one thread) <- the per-core tile: the tile of the
  array level (the first on-chip level when the arch has no array); parallel dims only;
- ``cache_parallel`` / ``cache_reduction`` <- the innermost level's tile (parallel / reduction
  dims; on the host preset the array is the innermost level, so ``cache_parallel`` repeats the
  workgroup tile and ``cache_reduction`` blocks the reduction for L1);
- ``vector_common_parallel`` / ``vector_reduction`` <- the register tile, which tilewise does not
  model: the output's last dim ``2 x lanes`` (two vectors of 32-bit lanes), the dim before it
  8, other parallel dims 1, the last reduction loop the products summed per 32-bit lane (4 for
  i8, 2 for 16-bit types, 1 for f32; other reduction loops 1), each cut to the largest divisor of the cache tile
  (:func:`register_tile`).

What IREE cannot take: a loop order (it picks its own), the tiles of levels other than the
array level and the innermost one (on the host preset: the L2 tile, which IREE leaves to the
order it runs workgroups in), a reduction tile above the innermost level: those are reported
in :attr:`Emitted.dropped` and in the module's comment header, not emitted. A named op with a
loop of extent 1 (a batch-1 conv2d, a 1x1 filter) loses its whole compilation_info: IREE 3.13
folds unit dims before code generation and does not carry the attribute over (two different
configs gave byte-identical binaries); the generic conv without those loops is refused by both
CPU pipelines. The header says so. A spatial split of a reduction dim (partial sums across
cores) is an error: IREE distributes parallel dims only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TilewiseError
from .forms import LinalgForm, linalg_form

_INT_ZERO = "0"
_FLOAT_ZERO = "0.000000e+00"
VECTOR_M = 8  # register tile of the dim before the output's last: 8 rows of accumulators
_BYTES = {"i8": 1, "i16": 2, "f16": 2, "i32": 4, "f32": 4}


@dataclass(frozen=True)
class LoweringConfig:
    """Tile sizes per IREE CPU level, one per loop of the op (0 = not tiled at that level)."""

    distribution: tuple[int, ...]
    cache_parallel: tuple[int, ...] | None
    cache_reduction: tuple[int, ...] | None
    vector_common_parallel: tuple[int, ...]
    vector_reduction: tuple[int, ...]

    def attr(self) -> str:
        """The ``#iree_cpu.lowering_config<...>`` text."""
        parts = []
        for name in ("distribution", "cache_parallel", "cache_reduction",
                     "vector_common_parallel", "vector_reduction"):
            sizes = getattr(self, name)
            if sizes is not None:
                parts.append(f"{name} = [{', '.join(map(str, sizes))}]")
        return f"#iree_cpu.lowering_config<{', '.join(parts)}>"


@dataclass(frozen=True)
class Emitted:
    """An MLIR module and what went into it: the linalg form, the lowering config (None:
    IREE's default), and the parts of the mapping IREE was not given (one line each)."""

    text: str
    form: LinalgForm
    config: LoweringConfig | None
    pipeline: str | None
    dropped: tuple[str, ...] = ()


def _largest_divisor(n: int, at_most: int) -> int:
    return max(d for d in range(1, min(n, at_most) + 1) if n % d == 0)


def register_tile(form: LinalgForm, cache: dict[str, int], lanes: int) -> dict[str, int]:
    """The vector (register) tile per loop: see the module doc. ``lanes``: 32-bit lanes per
    vector register (16 with AVX-512)."""
    out_dims = [d for d in form.loops if d not in form.reductions]
    last = {d: i for i, d in enumerate(_output_order(form))}
    ordered = sorted(out_dims, key=lambda d: last[d])
    # the reduction's register tile: the products a dot-product instruction sums per 32-bit
    # lane (vpdpbusd: 4 i8, vpmaddwd: 2 i16; f32: 1)
    per_lane = max(1, 4 // max(_BYTES.get(o.dtype, 4) for o in form.inputs))
    want = {d: 1 for d in form.loops}
    reductions = [d for d in form.loops if d in form.reductions]
    if reductions:  # the last reduction loop (GEMM k, conv c); conv's r, s stay 1 (decomposed)
        want[reductions[-1]] = per_lane
    if ordered:
        want[ordered[-1]] = 2 * lanes
    if len(ordered) > 1:
        want[ordered[-2]] = VECTOR_M
    return {d: _largest_divisor(cache[d], want[d]) for d in form.loops}


def _output_order(form: LinalgForm) -> tuple[str, ...]:
    """Output dims in the result's memory order (conv: n, p, q, k for NHWC)."""
    if form.op == "linalg.conv_2d_nhwc_hwcf":
        return ("n", "p", "q", "k")
    if form.maps:
        return form.maps[-1]
    return tuple(d for d in form.loops if d not in form.reductions)


def _distribution_index(arch, mapping) -> int:
    if arch.array is not None:
        names = [lv.level for lv in mapping.levels]
        if arch.array.level in names:
            return names.index(arch.array.level)
    return min(1, len(mapping.levels) - 1)


def lowering_config(workload, arch, mapping, lanes: int = 16,
                    form: LinalgForm | None = None) -> tuple[LoweringConfig, tuple[str, ...]]:
    """IREE's tile sizes for ``mapping`` and the lines saying what was dropped."""
    form = form or linalg_form(workload)
    for split in (mapping.rows, mapping.cols):
        if split is not None and split.dim in form.reductions and split.ways > 1:
            raise TilewiseError(
                f"the mapping splits reduction dim {split.dim!r} {split.ways} ways across cores; "
                "IREE distributes parallel dims only (search with spatial= over parallel dims)")
    levels = mapping.levels
    di = _distribution_index(arch, mapping)
    sizes = workload.sizes
    for lv in (levels[di], levels[-1]):
        missing = [d for d in form.loops if d not in lv.sizes]
        if missing:
            raise TilewiseError(f"mapping level {lv.level} has no tile for dim "
                                f"{', '.join(missing)}; {workload.name} has dims {', '.join(sizes)}")
    # a tile padded past its dim (alignment) is the whole dim to IREE
    dist = {d: min(t, sizes[d]) for d, t in levels[di].sizes.items()}
    inner = {d: min(t, sizes[d]) for d, t in levels[-1].sizes.items()}
    cfg = LoweringConfig(_by_kind(form, dist)[0], *_by_kind(form, inner),
                         *_by_kind(form, register_tile(form, inner, lanes)))
    return cfg, _dropped(form, mapping, di, dist, sizes)


def _by_kind(form: LinalgForm, tiles: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Per loop: (the tile of parallel loops, 0 at reductions), (the tile of reductions, 0 at
    parallel loops)."""
    return (tuple(0 if d in form.reductions else tiles[d] for d in form.loops),
            tuple(tiles[d] if d in form.reductions else 0 for d in form.loops))


def _dropped(form: LinalgForm, mapping, di: int, dist: dict, sizes: dict) -> tuple[str, ...]:
    """One line per part of the mapping the lowering config does not carry."""
    levels = mapping.levels
    out = [f"loop order {''.join(lv.order)} at {lv.level}: IREE picks its own"
           for lv in levels[:-1] if lv.order]
    out += [f"{lv.level} tile ({' '.join(f'{d}{t}' for d, t in lv.tiles)}): IREE has no "
            "level for it" for i, lv in enumerate(levels) if 0 < i < len(levels) - 1 and i != di]
    unit = [d for d in form.loops if sizes[d] == 1 and form.op != "linalg.generic"]
    if unit:
        out.append(f"{form.op} with {', '.join(f'{d}=1' for d in unit)}: IREE 3.13 folds unit "
                   "dims before code generation and drops this compilation_info (a batch-1 "
                   "conv2d compiles to the same binary whatever its config)")
    if di < len(levels) - 1 and any(dist[d] < sizes[d] for d in form.reductions):
        out.append(f"{levels[di].level} tile of reduction dims "
                   + " ".join(f"{d}{dist[d]}" for d in form.loops if d in form.reductions)
                   + ": IREE tiles reductions inside a workgroup only")
    return tuple(out)


def pipeline_of(form: LinalgForm) -> str:
    """IREE's CPU pipeline for the op: convolutions decompose to 1-D, the rest tile twice."""
    return ("ConvTileAndDecomposeExpert" if form.op.startswith("linalg.conv")
            else "DoubleTilingExpert")


def emit_mlir(workload, arch=None, mapping=None, lanes: int = 16) -> Emitted:
    """The MLIR module of ``workload``, tiled as ``mapping`` on ``arch`` (both None: no
    compilation_info, IREE's default); a comment header names the workload, the mapping and
    what IREE was not given. ``lanes``: 32-bit lanes per vector register."""
    workload, arch, mapping = solution_parts(workload, arch, mapping)
    form = linalg_form(workload)
    config, dropped, pipeline = None, (), None
    if mapping is not None:
        config, dropped = lowering_config(workload, arch, mapping, lanes, form)
        pipeline = pipeline_of(form)
    header = [f"// {workload}"]
    if mapping is not None:
        header.append(f"// tiled as {mapping} on {arch.name}")
        header += [f"// not expressible: {line}" for line in dropped]
    else:
        header.append("// no compilation_info: IREE's default tiling")
    text = "\n".join(header) + "\n" + _module(form, config, pipeline)
    return Emitted(text, form, config, pipeline, dropped)


def solution_parts(what, arch=None, mapping=None):
    """(workload, arch, mapping) of a search Result (its best solution), a SolutionFile, or a
    workload with ``arch`` and ``mapping`` (mapping None: IREE's default tiling). The arch is
    loaded (preset name, YAML path, "host"), the mapping parsed and checked legal."""
    from ..arch.loader import load_arch
    from ..mapping import as_mapping
    from ..model.legality import validate

    if hasattr(what, "best") and hasattr(what, "workload"):  # a search Result
        what, arch, mapping = what.workload, what.arch, what.best.mapping
    elif all(hasattr(what, k) for k in ("workload", "arch", "mapping")):  # a SolutionFile
        what, arch, mapping = what.workload, what.arch, what.mapping
    if mapping is None:
        return what, arch, None
    if arch is None:
        raise TilewiseError("a mapping needs the arch it was made for (arch=)")
    arch, mapping = load_arch(arch), as_mapping(mapping)
    validate(what, arch, mapping)
    return what, arch, mapping


def _tensor(shape, dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


def _module(form: LinalgForm, config: LoweringConfig | None, pipeline: str | None) -> str:
    ins = form.inputs
    out_t = _tensor(form.result.shape, form.result.dtype)
    zero = _INT_ZERO if form.result.dtype.startswith("i") else _FLOAT_ZERO
    lines = []
    if config is not None:
        lines += ["#compilation = #iree_codegen.compilation_info<",
                  f"  lowering_config = {config.attr()},",
                  "  translation_info = #iree_codegen.translation_info<pipeline = "
                  f"#iree_cpu.pipeline<{pipeline}>>>"]
    args = ", ".join(f"%{o.name}: {_tensor(o.shape, o.dtype)}" for o in ins)
    lines += [f"func.func @main({args}) -> {out_t} {{",
              f"  %zero = arith.constant {zero} : {form.result.dtype}",
              f"  %empty = tensor.empty() : {out_t}",
              f"  %init = linalg.fill ins(%zero : {form.result.dtype}) outs(%empty : {out_t}) "
              f"-> {out_t}"]
    lines += _op(form, config is not None, out_t)
    lines += [f"  return %result : {out_t}", "}"]
    return "\n".join(lines) + "\n"


def _op(form: LinalgForm, tiled: bool, out_t: str) -> list[str]:
    ins = form.inputs
    in_names = ", ".join(f"%{o.name}" for o in ins)
    in_types = ", ".join(_tensor(o.shape, o.dtype) for o in ins)
    attrs = [form.attrs] if form.attrs else []
    if tiled:
        attrs.append("compilation_info = #compilation")
    if form.op != "linalg.generic":
        attr = f" {{{', '.join(attrs)}}}" if attrs else ""
        return [f"  %result = {form.op}{attr} ins({in_names} : {in_types}) "
                f"outs(%init : {out_t}) -> {out_t}"]
    dims = ", ".join(form.loops)
    maps = ", ".join(f"affine_map<({dims}) -> ({', '.join(m)})>" for m in form.maps)
    iters = ", ".join('"reduction"' if d in form.reductions else '"parallel"'
                      for d in form.loops)
    extra = "".join(f", {a}" for a in attrs)
    return [f"  %result = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iters}]"
            f"{extra}}} ins({in_names} : {in_types}) outs(%init : {out_t}) {{",
            *_body(form), f"  }} -> {out_t}"]


def _body(form: LinalgForm) -> list[str]:
    """``acc += a * b`` with the inputs widened to the accumulator type."""
    acc = form.result.dtype
    args = ", ".join(f"%in{i}: {o.dtype}" for i, o in enumerate(form.inputs))
    lines = [f"  ^bb0({args}, %acc: {acc}):"]
    names = []
    for i, o in enumerate(form.inputs):
        if o.dtype == acc:
            names.append(f"%in{i}")
            continue
        cast = "arith.extsi" if acc.startswith("i") else "arith.extf"
        lines.append(f"    %w{i} = {cast} %in{i} : {o.dtype} to {acc}")
        names.append(f"%w{i}")
    mul, add = ("arith.muli", "arith.addi") if acc.startswith("i") else ("arith.mulf", "arith.addf")
    product = names[0]
    for i, name in enumerate(names[1:]):
        lines.append(f"    %p{i} = {mul} {product}, {name} : {acc}")
        product = f"%p{i}"
    lines += [f"    %sum = {add} %acc, {product} : {acc}", f"    linalg.yield %sum : {acc}"]
    return lines
