"""The BD kernel's per-axis item lists (:mod:`tilewise.model.kernel_bds`): sized by the tile
lists, not by the dims' extents, and guarded against an overrun."""

import numpy as np
import pytest

from tilewise.model.kernel_bds import _add, item_calls


def test_item_lists_do_not_grow_with_the_dims():
    # 3 levels, 2 window members, list widths (ME, WC*ME, max_x) = (6, 48, 4): a 10^6 dim's
    # lists were 2 x 10^6 wide (a 100 MB zero-fill per batch)
    assert item_calls(3, 2, (6, 48, 4)) == 3 * max(48, 6 ** 2 + 2 * 4 ** 2) + 1
    assert item_calls(3, 0, (6, 48, 4)) == 3 * 48 + 1  # no affine members: one per listed tile


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
