"""The BD kernel's per-axis item lists (:mod:`tilewise.model.kernel_bds`): sized by the tile
lists, not by the dims' extents, and guarded against an overrun."""

import numpy as np
import pytest

import tilewise as tw
from tilewise.arch.loader import load_arch

from tilewise.model.kernel_bds import _add


def _item_list_width(workload) -> int:
    """The width of the per-axis item lists the kernel allocates for ``workload`` on aie-4x2
    (its DMA limits active), with fixed tile-list widths."""
    from tilewise.model.kernel_bds import work_arrays
    from tilewise.model.problem import GI_MEM, Problem

    p = Problem.build(workload, load_arch("aie-4x2"))
    assert p.dma.active
    L, D, T = p.st.n_levels, len(p.st.dims), len(p.st.tensors)
    M = (p.groups.gi.shape[1] - GI_MEM) // 2
    bw = work_arrays(T, L, D, M, p.dma, p.dims.sizes, p.groups.axes, p.groups.gi,
                     (L + 3, 8 * (L + 3), p.groups.max_x))
    return bw[3].shape[1]


@pytest.mark.parametrize("make", [lambda n: tw.gemm(n, n, n, dtype="i8"),
                                  lambda n: tw.mha(n, n, 64, dtype="i8")], ids=["gemm", "mha"])
def test_item_lists_do_not_grow_with_the_dims(make):
    # a 10^6 dim's lists were 2 x 10^6 wide (a 100 MB zero-fill per batch). Plain axes only:
    # a convolution's rounded windows list their dims' tiles one by one (groups.max_x grows
    # with the dim, and the border-tile array X with it), so its lists still grow
    small, huge = _item_list_width(make(10_000)), _item_list_width(make(1_000_000))
    assert small == huge < 10_000


def test_a_full_item_list_raises_instead_of_overrunning():
    IE = np.zeros((1, 2), np.int64)
    IW = np.zeros((1, 2), np.int64)
    IN = np.zeros(1, np.int64)
    _add(IE, IW, IN, 0, 5, 1)
    _add(IE, IW, IN, 0, 5, 2)  # merged with the equal extent
    _add(IE, IW, IN, 0, 7, 1)
    assert IN[0] == 2 and list(IE[0]) == [5, 7] and list(IW[0]) == [3, 1]
    with pytest.raises(IndexError, match="item list is full"):
        _add(IE, IW, IN, 0, 9, 1)
