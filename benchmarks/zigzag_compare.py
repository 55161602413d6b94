"""ZigZag side by side: per-level, per-operand traffic of tilewise and ZigZag on fixed mappings.

For each case, ZigZag (``pip install zigzag-dse six``; its bundled hardware models) evaluates
one layer under a fixed spatial mapping and a complete temporal ordering (its memory allocator
then assigns the loops of each operand to that operand's memories, bottom up). tilewise
evaluates the same loop nest on the translated arch (``examples/zigzag/*.yaml``): per operand
the tiles at each level are the loops ZigZag put below that operand's memory there (ZigZag
allocates each operand separately, so each operand gets the mapping of its own allocation; the
nest, orders and spatial split are the same), and the table compares element counts:

- inputs: elements written into a memory from above (ZigZag ``wr_in_by_high``) vs tilewise's
  bytes read into the level / element bytes;
- outputs: elements arriving at the parent memory from below (ZigZag ``wr_in_by_low`` of the
  next memory up: after the array's spatial reduction) vs tilewise's stores out of the level,
  and partial sums read back down (ZigZag ``wr_in_by_high``) vs tilewise's reloads.

Memory -> MAC reads (ZigZag ``rd_out_to_low`` of the lowest memory) are not traffic in tilewise
(the compute reads its innermost buffers); they are left out. Run::

    .venv/bin/python benchmarks/zigzag_compare.py [--out benchmarks/results/zigzag.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tilewise import conv2d, evaluate, gemm
from tilewise.arch.loader import load_arch
from tilewise.mapping import LevelMapping, Mapping, Spatial

ROOT = Path(__file__).resolve().parents[1]
ROLE = {"I": "in1", "W": "in2", "O": "out"}          # ZigZag layer operand -> tilewise role
MEM_OP = {"I": "I1", "W": "I2", "O": "O"}             # memory_operand_links of every case


@dataclass(frozen=True)
class Case:
    """One layer on one accelerator: ZigZag's hardware file and layer, tilewise's arch file and
    workload, the ZigZag -> tilewise dim names, the spatial mapping (ZigZag array dim -> (layer
    dim, ways)), the temporal ordering (innermost first), which ZigZag array dims are tilewise's
    rows and cols (the others are unrolled inside a core), and per ZigZag memory its level."""

    name: str
    hardware: str
    arch: str
    layer: dict
    workload: object
    dims: dict
    spatial: dict
    temporal: list
    rows: str
    cols: str
    levels: dict
    notes: str = ""
    core_dims: tuple = field(default=())


def _gemm_layer(M, N, K):
    return {"id": 0, "name": "gemm", "operator_type": "Gemm",
            "equation": "O[d0][d1]+=I[d0][d2]*W[d2][d1]", "loop_dims": ["D0", "D1", "D2"],
            "loop_sizes": [M, N, K], "operand_precision": {"W": 8, "I": 8, "O": 16, "O_final": 16},
            "operand_source": {"I": 0, "W": 0}}


def _conv_layer(K, C, OY, OX, FY, FX):
    return {"id": 0, "name": "conv", "operator_type": "Conv",
            "equation": "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]",
            "dimension_relations": ["ix=1*ox+1*fx", "iy=1*oy+1*fy"],
            "loop_dims": ["B", "K", "C", "OY", "OX", "FY", "FX"],
            "loop_sizes": [1, K, C, OY, OX, FY, FX],
            "operand_precision": {"W": 8, "I": 8, "O": 16, "O_final": 16},
            "operand_source": {"I": 0, "W": 0}}


GEMM_DIMS = {"D0": "m", "D1": "n", "D2": "k"}
CONV_DIMS = {"B": "n", "K": "k", "C": "c", "OY": "p", "OX": "q", "FY": "r", "FX": "s"}
TPU = {"rf_128B": "pe", "rf_2B": "pe", "sram_2MB": "sram", "dram": "dram"}
EDGE = {"rf_1B": "pe", "rf_2B": "pe", "sram_32KB": "sram", "sram_2MB": "sram", "dram": "dram"}
L1L3 = {"reg_O": "reg", "l1": "l1", "l3": "l3"}


def _conv(K, C, OY, OX, FY, FX):
    return conv2d(1, C, OY + FY - 1, OX + FX - 1, K, FY, FX)


CASES = [
    Case("tpu_like gemm 64x64x64", "tpu_like", "tpu_like", _gemm_layer(64, 64, 64), gemm(64, 64, 64),
         GEMM_DIMS, {"D1": ("D1", 32), "D2": ("D2", 32)}, [("D0", 64), ("D2", 2), ("D1", 2)],
         rows="D2", cols="D1", levels=TPU),
    Case("tpu_like gemm 128x64x96", "tpu_like", "tpu_like", _gemm_layer(128, 64, 96),
         gemm(128, 64, 96), GEMM_DIMS, {"D1": ("D1", 32), "D2": ("D2", 32)},
         [("D2", 3), ("D0", 128), ("D1", 2)], rows="D2", cols="D1", levels=TPU),
    Case("tpu_like conv K64 C64 8x8 3x3", "tpu_like", "tpu_like", _conv_layer(64, 64, 8, 8, 3, 3),
         _conv(64, 64, 8, 8, 3, 3), CONV_DIMS, {"D1": ("K", 32), "D2": ("C", 32)},
         [("OX", 8), ("OY", 8), ("FX", 3), ("FY", 3), ("K", 2), ("C", 2)],
         rows="D2", cols="D1", levels=TPU),
    Case("edge_tpu_like conv K16 C16 8x8 3x3", "edge_tpu_like", "edge_tpu_like",
         _conv_layer(16, 16, 8, 8, 3, 3), _conv(16, 16, 8, 8, 3, 3), CONV_DIMS,
         {"D1": ("K", 8), "D2": ("C", 8), "D3": ("OX", 4), "D4": ("OY", 4)},
         [("FX", 3), ("FY", 3), ("OX", 2), ("OY", 2), ("K", 2), ("C", 2)],
         rows="D2", cols="D1", levels=EDGE, core_dims=("D3", "D4")),
    Case("edge_tpu_like conv1x1 K64 C64 8x8", "edge_tpu_like", "edge_tpu_like",
         _conv_layer(64, 64, 8, 8, 1, 1), _conv(64, 64, 8, 8, 1, 1), CONV_DIMS,
         {"D1": ("K", 8), "D2": ("C", 8), "D3": ("OX", 4), "D4": ("OY", 4)},
         [("C", 8), ("OX", 2), ("OY", 2), ("K", 8)],
         rows="D2", cols="D1", levels=EDGE, core_dims=("D3", "D4")),
    Case("gemm_l1_l3 gemm 64x64x64", "gemm_l1_l3", "gemm_l1_l3", _gemm_layer(64, 64, 64),
         gemm(64, 64, 64), GEMM_DIMS, {"D1": ("D0", 8), "D2": ("D2", 8), "D3": ("D1", 8)},
         [("D2", 8), ("D0", 8), ("D1", 8)], rows="D2", cols="D3", levels=L1L3, core_dims=("D1",)),
    Case("gemm_l1_l3 gemm 32x128x256", "gemm_l1_l3", "gemm_l1_l3", _gemm_layer(32, 128, 256),
         gemm(32, 128, 256), GEMM_DIMS, {"D1": ("D0", 8), "D2": ("D2", 8), "D3": ("D1", 8)},
         [("D1", 16), ("D2", 32), ("D0", 4)], rows="D2", cols="D3", levels=L1L3,
         core_dims=("D1",)),
]


def run_zigzag(case: Case, folder: Path):
    """ZigZag's cost model evaluation of ``case`` (its one layer, fixed mapping)."""
    from zigzag.api import get_hardware_performance_zigzag
    import zigzag

    logging.disable(logging.CRITICAL)
    layer, mapping = folder / "layer.yaml", folder / "mapping.yaml"
    layer.write_text(yaml.safe_dump([case.layer]))
    mapping.write_text(yaml.safe_dump([{
        "name": "default",
        "spatial_mapping": {d: [f"{ld}, {w}"] for d, (ld, w) in case.spatial.items()},
        "temporal_ordering": [[d, s] for d, s in case.temporal],
        "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}]))
    hw = Path(zigzag.__file__).parent / "inputs" / "hardware" / f"{case.hardware}.yaml"
    _, _, cmes = get_hardware_performance_zigzag(
        str(layer), str(hw), str(mapping), dump_folder=str(folder / "out"),
        loma_show_progress_bar=False)
    return cmes[0][1][0][0]


def zigzag_counts(cme, operand: str) -> list[tuple[str, dict, list]]:
    """Per memory of ``operand`` (lowest first): its name, element moves by direction, and the
    temporal loops ZigZag allocated to it (innermost first, ZigZag dim names)."""
    from zigzag.hardware.architecture.memory_port import DataDirection
    from zigzag.mapping.data_movement import DataMoveAttr

    mems = [m.name for m in cme.mem_hierarchy_dict[_mem_op(cme, operand)]]
    pats = cme.mapping.unit_mem_data_movement[_layer_op(cme, operand)]
    loops = cme.temporal_mapping.mapping_dic_origin[_layer_op(cme, operand)]
    out = []
    for name, pat, lv in zip(mems, pats, loops):
        c = pat.get_attribute(DataMoveAttr.DATA_ELEM_MOVE_COUNT)
        out.append((name, {d.value: int(c.get(d)) for d in DataDirection},
                    [(str(d), int(s)) for d, s in lv]))
    return out


def _layer_op(cme, operand):
    return next(k for k in cme.mapping.unit_mem_data_movement if str(k) == operand)


def _mem_op(cme, operand):
    return next(k for k in cme.mem_hierarchy_dict if str(k) == MEM_OP[operand])


def tilewise_mapping(case: Case, arch, zz: list) -> Mapping:
    """The tilewise mapping of one operand's ZigZag allocation ``zz`` (:func:`zigzag_counts`):
    level ``l``'s tile spans the temporal loops ZigZag allocated to the operand's memory at
    ``l`` and below (where ``l`` does not hold it, those of the nearest level below), times
    the core-internal spatial unrolling, times the split ways above the array."""
    w = case.workload
    dims, L = list(w.sizes), len(arch.levels)
    names = [lv.name for lv in arch.levels]
    flat, bound = [], {}
    for mem, _, loops in zz:  # a memory's tile spans its own loops and those below
        flat += loops
        bound[case.levels[mem]] = max(bound.get(case.levels[mem], 0), len(flat))
    b = [0] * L
    for l in range(L - 1, 0, -1):
        b[l] = bound.get(names[l], b[l + 1] if l + 1 < L else 0)
    b[0] = len(flat)
    a = names.index(arch.array.level)
    ways = {case.dims[ld]: wy for d, (ld, wy) in case.spatial.items() if d in (case.rows, case.cols)}
    inner = {case.dims[ld]: wy for d, (ld, wy) in case.spatial.items() if d in case.core_dims}
    levels = []
    for l in range(L):
        tile = {d: inner.get(d, 1) for d in dims}
        for d, s in flat[:b[l]]:
            tile[case.dims[d]] *= s
        if l < a:
            tile = {d: t * ways.get(d, 1) for d, t in tile.items()}
        if l == 0:
            tile = dict(w.sizes)
        order = ()
        if l < L - 1:
            mine = [case.dims[d] for d, _ in reversed(flat[b[l + 1]:b[l]])]
            if len(set(mine)) != len(mine):
                raise ValueError(f"{case.name}: a dim loops twice at {names[l]}: {mine}")
            order = tuple(mine + [d for d in dims if d not in mine])
        levels.append(LevelMapping(names[l], tuple((d, tile[d]) for d in dims), order))
    sp = {axis: Spatial(case.dims[case.spatial[key][0]], case.spatial[key][1])
          for axis, key in (("rows", case.rows), ("cols", case.cols))}
    return Mapping(tuple(levels), sp["rows"], sp["cols"])


def compare(case: Case, folder: Path) -> list[dict]:
    """Rows of the side-by-side table for ``case``."""
    arch = load_arch(ROOT / "examples" / "zigzag" / f"{case.arch}.yaml")
    cme = run_zigzag(case, folder)
    rows = []
    for operand in ("I", "W", "O"):
        zz = zigzag_counts(cme, operand)
        m = tilewise_mapping(case, arch, zz)
        cost = evaluate(case.workload, arch, m, check_capacity=False)
        t = _tensor(case.workload, operand)
        eb = case.workload.tensor(t).element_bytes
        if operand == "O":
            eb = 4  # i32 sums
        for i, (mem, moves, _) in enumerate(zz[:-1]):
            lv = case.levels[mem]
            if operand == "O":
                parent = zz[i + 1][1]
                pairs = [("stores up", parent["wr_in_by_low"], cost.writes[lv].get(t, 0) // eb),
                         ("partial sums back", moves["wr_in_by_high"],
                          cost.reloads[lv].get(t, 0) // eb)]
            else:
                pairs = [("fills", moves["wr_in_by_high"], cost.reads[lv].get(t, 0) // eb)]
            for what, z, tw in pairs:
                rows.append({"case": case.name, "operand": f"{operand} ({t})", "memory": mem,
                             "level": lv, "what": what, "zigzag": z, "tilewise": tw,
                             "mapping": str(m)})
    return rows


def _tensor(workload, operand: str) -> str:
    """The workload tensor of ZigZag operand I / W / O (by role: first input, second, output)."""
    op = workload.ops[0]
    return {"I": op.inputs[0].name, "W": op.inputs[1].name, "O": op.output.name}[operand]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "zigzag.json"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(CASES):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            rows += compare(case, folder)
    width = max(len(r["case"]) for r in rows)
    print(f"{'case':<{width}}  {'operand':<8} {'memory (level)':<22} {'moves':<18} "
          f"{'ZigZag':>9} {'tilewise':>9}  ratio")
    for r in rows:
        ratio = r["tilewise"] / r["zigzag"] if r["zigzag"] else (1.0 if not r["tilewise"] else math.inf)
        print(f"{r['case']:<{width}}  {r['operand']:<8} {r['memory'] + ' (' + r['level'] + ')':<22} "
              f"{r['what']:<18} {r['zigzag']:>9,} {r['tilewise']:>9,}  {ratio:.3f}")
    same = sum(r["zigzag"] == r["tilewise"] for r in rows)
    print(f"\n{same} of {len(rows)} counts equal")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows, "equal": same, "total": len(rows)}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
