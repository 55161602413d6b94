"""``tilewise layout`` via tilewise.cli.main: output, exit codes, one-line errors."""

import pytest

from tilewise.cli import main

from .test_render import FIGURE1


def test_layout_prints_grid_and_summary(capsys):
    assert main(["layout", "f32[3,5]{1,0:T(2,2)}"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == FIGURE1


def test_several_shapes_index_and_mlir(capsys):
    assert main(["layout", "f32[3,5]{1,0:T(2,2)}", "bf16[4,8]{1,0:T(2,4)(2,1)}",
                 "--index", "2,3", "--mlir"]) == 0
    out = capsys.readouterr().out
    assert "offset of element (2, 3): 17" in out and "offset of element (2, 3): 22" in out
    assert "physical bf16[2,2,1,4,2,1]: 32 elements = 32 + 0 padding (0.0 %), 64 bytes" in out
    assert out.count("func.func @to_physical") == 2
    assert "linalg.pack %0 inner_dims_pos = [2, 3] inner_tiles = [2, 1]" in out


def test_png_option(tmp_path, capsys):
    png = tmp_path / "fig.png"
    assert main(["layout", "f32[3,5]{1,0:T(2,2)}", "--png", str(png)]) == 0
    assert f"wrote {png}" in capsys.readouterr().out
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args, message", [
    (["layout", "f32[3,5]{1,0:T(2,2}"], "malformed XLA shape 'f32[3,5]{1,0:T(2,2}': at character 19"),
    (["layout", "f32[3,5]{1,1}"], "not a permutation of 0..1"),
    (["layout", "f32[3,5]{1,0:D(D,C)}"], "not supported: sparse dim level type 'C'"),
    (["layout", "f32[3,5]", "--index", "3,0"], "index (3, 0) is out of bounds"),
    (["layout", "f32[3,5]", "--index", "1,x"], "malformed element index '1,x': at character 3"),
])
def test_bad_input_is_one_error_line(args, message, capsys):
    assert main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_missing_shape_is_usage_error(capsys):
    assert main(["layout"]) == 2
    assert "Missing argument" in capsys.readouterr().err
