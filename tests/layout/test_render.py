"""Rendering of XLA layouts: the text grid (exact, seed figure 1) and the PNG."""

import numpy as np
import pytest

from tilewise.errors import LayoutError
from tilewise.layout import render
from tilewise.layout.render import grid, render_png, render_text, summary
from tilewise.layout.xla import Shape

FIGURE1 = """\
f32[3,5]{1,0:T(2,2)}: buffer offset of each element (rows: dim 0, columns: dim 1; ·n = padding)
     0   1 |   2   3 |   4   5
0    0   1 |   4   5 |   8  ·9
1    2   3 |   6   7 |  10 ·11
  ---------+---------+--------
2   12  13 |  16  17 |  20 ·21
3  ·14 ·15 | ·18 ·19 | ·22 ·23
physical f32[2,3,2,2]: 24 elements = 15 + 9 padding (37.5 %), 96 bytes"""


def test_figure1_text_grid():
    assert render_text(Shape.parse("f32[3,5]{1,0:T(2,2)}")) == FIGURE1


@pytest.mark.parametrize("text", [
    "f32[3,5]{1,0:T(2,2)}", "bf16[4,8]{1,0:T(2,4)(2,1)}", "f32[3,5]{0,1:T(2,2)}",
    "f32[2,3,5]{2,1,0:T(2,2)}", "f32[2,3,4]{2,1,0:T(*,2,2)}", "f32[7]{0:T(4)L(16)}", "f32[]",
    "f32[3,5]{0,1}", "f32[]{:T(4)}",
])
def test_grid_agrees_with_linear_index(text):
    s = Shape.parse(text)
    g = grid(s)
    logical = g.offset[~g.padding]
    np.testing.assert_array_equal(np.sort(logical), np.sort(s.linear_indices().ravel()))
    # the logical cells, in row-major logical order, are the logical elements
    box_cells = g.offset.size
    assert box_cells >= s.num_elements and int((~g.padding).sum()) == s.num_elements
    # padding cells hold distinct buffer offsets that no element uses
    pad = g.offset[g.padding]
    assert len(set(pad.tolist())) == pad.size and not set(pad.tolist()) & set(logical.tolist())
    assert (g.offset < s.size_in_elements).all()


def test_padded_box_rows_and_column_major():
    g = grid(Shape.parse("f32[3,5]{0,1:T(2,2)}"))  # physical [5,3] padded to [6,4]
    assert g.offset.shape == (4, 6) and g.padding[3].all() and g.padding[:, 5].all()
    assert grid(Shape.parse("f32[2,3,5]{2,1,0}")).row_labels == ("0,0", "0,1", "0,2", "1,0", "1,1", "1,2")


def test_text_truncation_and_rank3_labels():
    out = render_text(Shape.parse("bf16[64,300]{1,0:T(8,128)(2,1)}"), max_rows=10, max_cols=12)
    lines = out.splitlines()
    assert lines[1].rstrip().endswith("11 ...") and "(54 more rows)" in out
    assert lines[-1] == summary(Shape.parse("bf16[64,300]{1,0:T(8,128)(2,1)}"))
    assert "physical bf16[8,3,4,128,2,1]: 24576 elements = 19200 + 5376 padding (21.9 %)" in out
    r3 = render_text(Shape.parse("f32[2,3,5]{2,1,0:T(2,2)}")).splitlines()
    assert r3[1].startswith(" " * 5) and r3[2].startswith("0,0 ") and "rows: dims 0,1" in r3[0]


def test_png_small_and_large(tmp_path):
    small, large = tmp_path / "small.png", tmp_path / "large.png"
    render_png(["f32[3,5]{1,0:T(2,2)}", Shape.parse("bf16[4,8]{1,0:T(2,4)(2,1)}")], str(small))
    render_png(["bf16[256,1000]{1,0:T(8,128)(2,1)}"], str(large))
    for p in (small, large):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_too_large_to_draw(monkeypatch):
    monkeypatch.setattr(render, "MAX_DRAW_ELEMENTS", 100)
    with pytest.raises(LayoutError, match="too large to draw: 128 elements"):
        grid(Shape.parse("f32[8,16]"))


def test_text_of_huge_shapes_computes_only_the_window():
    # 10^10 elements: the text view evaluates only the cells it prints; the PNG refuses.
    huge = Shape.parse("bf16[100000,100000]{1,0:T(8,128)(2,1)}")
    lines = render_text(huge, max_rows=4, max_cols=6).splitlines()
    assert lines[3].split() == ["1", "1", "3", "5", "7", "9", "11", "..."]
    assert lines[5].split() == ["3", "257", "259", "261", "263", "265", "267", "..."]
    assert "(99996 more rows)" in lines[6]
    for r, c in [(3, 5), (1, 2)]:
        assert int(lines[2 + r].split()[1 + c]) == huge.linear_index((r, c))
    small = Shape.parse("f32[40,30,20]{0,2,1:T(8,4)}")
    window = grid(small, max_rows=50, max_cols=7)
    full = grid(small)
    assert (window.rows, window.cols) == (full.rows, full.cols) == (40 * 30, 24)  # dim 2 padded
    assert window.row_labels == full.row_labels[:50]
    for a, b in [(window.offset, full.offset), (window.padding, full.padding),
                 (window.block, full.block)]:
        np.testing.assert_array_equal(a, b[:50, :7])
    with pytest.raises(LayoutError, match="too large to draw: 10009600000 elements"):
        grid(huge)
