"""Time per link and end-to-end latency, from traffic and compute.

Link ``l`` (``l >= 1``) joins level ``l`` to its parent. A transfer into level ``c`` comes from
the nearest level above that keeps the tensor, so with bypassing it crosses several links; it
counts on each. Per link, with ``bw = bandwidth x channels x instances`` (instances: all of them
above the array, the cores used at and below it)::

    T_l = max(bytes read into l / read bw, bytes written out of l / write bw)       seconds
    E_l = the same with only the bytes of tensors *not* double-buffered at the receiving level
    O_l = the same with only the bytes of the double-buffered ones

Double-buffered transfers overlap compute; the others stall it. With ``T_c`` the compute time
(cycles of the busiest core / clock, ops run one after another)::

    latency = max(T_c + sum_l E_l, max_l T_l) + sum_l O_l / iterations_l

the last term being the pipeline fill/drain: one tile's worth of each overlapped link
(``iterations_l`` = tiles visited at level l per instance). Nothing double-buffered gives
``T_c + sum_l T_l``; everything double-buffered ``max(T_c, max_l T_l)`` + fill.
Seed 003's ratio 𝔽 per link is ``T_u / T_l`` (> 1: compute bound), ``T_u`` the useful
compute of every core at peak.
"""

from __future__ import annotations

import numpy as np

from tilewise.errors import SpecError


def link_times(st, batch, reads, writes, used_cores):
    """``T, E, O``: ``[batch, levels]`` seconds per link (index 0 unused, zero)."""
    arch = st.arch
    B, L, T = reads.shape
    a = st.array_level if st.array_level is not None else L
    kept = ~batch.bypass
    exposed = ~batch.double_buffer
    rd, wr, rd_x, wr_x = (np.zeros((B, L)) for _ in range(4))
    src = np.zeros((B, T), np.int64)  # nearest kept level above the current one, per tensor
    for c in range(1, L):
        r, w = reads[:, c, :], writes[:, c, :]
        rx, wx = r * exposed[:, c, :], w * exposed[:, c, :]
        for l in range(1, c + 1):  # a transfer into c from src crosses links src+1 .. c
            cross = src < l
            rd[:, l] += (r * cross).sum(1)
            wr[:, l] += (w * cross).sum(1)
            rd_x[:, l] += (rx * cross).sum(1)
            wr_x[:, l] += (wx * cross).sum(1)
        src = np.where(kept[:, c, :], c, src)
    Tt = np.zeros((B, L))
    Ex = np.zeros((B, L))
    Ov = np.zeros((B, L))
    for l in range(1, L):
        lv = arch.levels[l]
        inst = lv.instances if l < a else np.minimum(lv.instances, used_cores)
        rbw = lv.read_bandwidth * lv.channels * inst
        wbw = lv.write_bandwidth * lv.channels * inst
        if (lv.read_bandwidth <= 0 and rd[:, l].any()) or (lv.write_bandwidth <= 0 and wr[:, l].any()):
            raise SpecError(f"arch {arch.name}: level {lv.name} moves data but has no bandwidth; "
                            "give it read_bandwidth and write_bandwidth")
        with np.errstate(divide="ignore", invalid="ignore"):
            Tt[:, l] = np.maximum(np.where(rd[:, l] > 0, rd[:, l] / rbw, 0),
                                  np.where(wr[:, l] > 0, wr[:, l] / wbw, 0))
            Ex[:, l] = np.maximum(np.where(rd_x[:, l] > 0, rd_x[:, l] / rbw, 0),
                                  np.where(wr_x[:, l] > 0, wr_x[:, l] / wbw, 0))
            rd_o, wr_o = rd[:, l] - rd_x[:, l], wr[:, l] - wr_x[:, l]
            Ov[:, l] = np.maximum(np.where(rd_o > 0, rd_o / rbw, 0), np.where(wr_o > 0, wr_o / wbw, 0))
    return Tt, Ex, Ov


def latency(compute_s, Tt, Ex, Ov, iterations):
    """End-to-end seconds per candidate (see the module docstring)."""
    fill = (Ov[:, 1:] / np.maximum(iterations[:, 1:], 1)).sum(1)
    return np.maximum(compute_s + Ex.sum(1), Tt.max(1)) + fill
