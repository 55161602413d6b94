"""``tilewise pack`` / ``tilewise unpack`` on the command line."""

import pytest

from tilewise.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_pack_prints_packed_type_op_and_xla(capsys):
    code, out, err = _run(capsys, "pack", "128x256xf32", "--inner-dims-pos", "0,1",
                          "--inner-tiles", "32,32")
    assert code == 0 and err == ""
    assert "tensor<4x8x32x32xf32>" in out
    assert ("%packed = linalg.pack %source inner_dims_pos = [0, 1] inner_tiles = [32, 32] into "
            "%dest : tensor<128x256xf32> -> tensor<4x8x32x32xf32>") in out
    assert "f32[128,256]{1,0:T(32,32)}" in out


def test_pack_with_perm_padding_and_mlir_type_syntax(capsys):
    code, out, _ = _run(capsys, "pack", "tensor<200x127x256xbf16>", "--inner-dims-pos", "1",
                        "--inner-tiles", "2", "--outer-dims-perm", "2,1,0",
                        "--padding-value", "0")
    assert code == 0
    assert "tensor<256x64x200x2xbf16>" in out
    assert "padding_value(%pad : bf16) outer_dims_perm = [2, 1, 0]" in out
    assert "51200 elements" in out


def test_unpack_prints_unpacked_type(capsys):
    code, out, _ = _run(capsys, "unpack", "16x8x8x32xf32", "--inner-dims-pos", "0,1",
                        "--inner-tiles", "8,32")
    assert code == 0
    assert "tensor<128x256xf32>" in out
    assert ("%unpacked = linalg.unpack %packed inner_dims_pos = [0, 1] inner_tiles = [8, 32] "
            "into %dest : tensor<16x8x8x32xf32> -> tensor<128x256xf32>") in out
    code, out, _ = _run(capsys, "unpack", "4x8x32x32xi8", "--inner-dims-pos", "0,1",
                        "--inner-tiles", "32,32", "--shape", "100x250")
    assert code == 0 and "tensor<100x250xi8>" in out and "7768 padding elements" in out


@pytest.mark.parametrize("argv, message", [
    (["pack", "500x1000xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "32,32"],
     "Only full tiles are supported when padding_value is not set"),
    (["pack", "128x256xf32", "--inner-dims-pos", "1,1", "--inner-tiles", "32,32"],
     "invalid inner_dims_pos vector [1, 1]"),
    (["pack", "128x256xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "0,32"],
     "invalid zero tile factor"),
    (["pack", "128x256xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "32,32",
      "--outer-dims-perm", "0"], "outer_dims_perm must be a permutation or empty"),
    (["pack", "128x?xf32", "--inner-dims-pos", "0", "--inner-tiles", "32"],
     "dynamic '?' sizes are not supported"),
    (["pack", "128x256xf33", "--inner-dims-pos", "0", "--inner-tiles", "32"],
     "unknown dtype 'f33'"),
    (["pack", "100xi8", "--inner-dims-pos", "0", "--inner-tiles", "32", "--padding-value",
      "300"], "expected padding_value has 'i8' but got: 300"),
    (["pack", "100xi8", "--inner-dims-pos", "0", "--inner-tiles", "32", "--padding-value",
      "zero"], "malformed padding value 'zero'"),
    (["pack", "100xi8", "--inner-dims-pos", "0,x", "--inner-tiles", "32"],
     "malformed --inner-dims-pos '0,x'"),
    (["unpack", "4x8x32x32xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "32,32",
      "--shape", "90x250"], "expected 'tensor<3x8x32x32>' for the packed domain value"),
    (["unpack", "4x8x32x16xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "32,32"],
     "mismatch in inner tile sizes"),
])
def test_errors_are_one_line(capsys, argv, message):
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert message in lines[0]
