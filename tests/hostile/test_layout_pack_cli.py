"""Hostile layout strings, packs and index lists on the CLI: `layout`, `pack`, `unpack`."""

import pytest

PACK = ["--inner-dims-pos", "0", "--inner-tiles", "32"]


@pytest.mark.parametrize("shape, names", [
    ("f32[2,3]{1,0", ["'}'", "character 13"]),              # unclosed layout
    ("f32[2,3]{2,0}", ["[2, 0]", "permutation"]),            # a dim that does not exist
    ("f32[2,3]{0,0}", ["[0, 0]", "permutation"]),            # a dim repeated
    ("f32[2,3]{0}", ["[0]", "rank 2"]),                      # too few dims
    ("q9[2,3]", ["'q'", "element type"]),                    # unknown element type
    ("", ["end of text", "element type"]),                   # nothing
    ("f32[-2,3]", ["'-'", "non-negative"]),                  # negative size
    ("f32[2.5,3]", ["'.'", "f32[2▶.5,3]"]),                  # a float size
    ("f32[2,3]{1,0:T(0,2)}", ["got 0", "positive"]),         # a zero tile
    ("f32[2,3]{1,0:T(2,-1)}", ["T(2,-1)", "most-minor"]),   # -1 is XLA's '*', not a size
    ("f32[2,3]{1,0:T(2,2)(2,2)(2,2)(2,2)(2,2)(2,2)(2,2)(2,2)(2,2)}", []),  # accepted below
    ("f32[99999999999999999999]", ["99999999999999999999", "2^62"]),  # int64 overflow
    ("f32[4294967296,4294967296]", ["2^62"]),                # a product above int64
    ("f32[2,3]{1,0:E(4)}", ["E(4)", "32 bits"]),             # element narrower than its type
    ("f32[2,3]{1,0:Q(2)}", ["'Q'"]),                         # unknown layout field
    ("f32[2,3]]", ["']'"]),                                  # trailing junk
    ("f32 [2,3]", []),                                       # a space inside: accepted below
    ("tensor<2x3xf32>", ["tensor<2x3xf32>", "XLA element type"]),                            # MLIR text where XLA is expected
])
def test_malformed_layout_strings(fails_clearly, succeeds, shape, names):
    if not names:  # nine levels of tiles, a space after the type: legal, printed
        assert "physical" in succeeds(["layout", shape])
        return
    fails_clearly(["layout", shape], *names)


@pytest.mark.parametrize("index, names", [
    ("5,5", ["(5, 5)", "out of bounds"]),
    ("a,b", ["'a'", "an integer"]),
    ("1.5,0", ["1.5,0", "an integer"]),
    ("1", ["(1,)", "need 2 integers"]),
    ("-1,0", ["(-1, 0)", "out of bounds"]),
    ("1,2,3", ["(1, 2, 3)", "need 2"]),
])
def test_bad_element_index(fails_clearly, index, names):
    fails_clearly(["layout", "f32[2,3]", "--index", index], *names)


@pytest.mark.parametrize("option", ["--max-rows", "--max-cols"])
@pytest.mark.parametrize("value", ["0", "-1", "x"])
def test_bad_grid_sizes(fails_clearly, option, value):
    fails_clearly(["layout", "f32[2,3]", option, value], option, value)


def test_png_into_a_folder_or_a_full_device(fails_clearly, tmp_path):
    fails_clearly(["layout", "f32[2,3]", "--png", tmp_path], str(tmp_path), "directory")
    fails_clearly(["layout", "f32[2,3]", "--png", "/dev/full"], "/dev/full", "No space left")


def test_png_of_a_huge_layout_refused(fails_clearly, tmp_path):
    fails_clearly(["layout", "f32[100000,100000]", "--png", tmp_path / "x.png"],
                  "too large to draw", "16777216")


@pytest.mark.parametrize("argv, names", [
    (["128x256xf32", "--inner-dims-pos", "0,0", "--inner-tiles", "32,32"], ["[0, 0]", "repeated"]),
    (["128x256xf32", "--inner-dims-pos", "2", "--inner-tiles", "32"], ["[2]", "out of range"]),
    (["128x256xf32", "--inner-dims-pos", "-1", "--inner-tiles", "32"], ["[-1]"]),
    (["128x256xf32", "--inner-dims-pos", "0", "--inner-tiles", "0"], ["zero tile factor"]),
    (["128x256xf32", "--inner-dims-pos", "0", "--inner-tiles", "-4"], ["-4", "positive"]),
    (["128x256xf32", "--inner-dims-pos", "0", "--inner-tiles", "3"], ["not a multiple of its tile 3",
                                                                    "padding"]),
    (["128x256xq7", *PACK], ["q7", "element type"]),
    (["tensor<128x256xf32", *PACK], ["'>'"]),
    (["128x256xf32", *PACK, "--outer-dims-perm", "0,0"], ["[0, 0]", "repeated"]),
    (["128x256xf32", *PACK, "--outer-dims-perm", "1"], ["[1]", "permutation"]),
    (["128x256xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "32"], ["[32] has 1", "[0, 1] has 2"]),
    (["99999999999999999999x2xf32", *PACK], ["99999999999999999999"]),
    (["128x256xf32", "--inner-dims-pos", "a", "--inner-tiles", "32"], ["'a'", "integer"]),
    (["128x256xf32", "--inner-dims-pos", "0", "--inner-tiles", "1e3"], ["'1e3'", "integer"]),
    (["128x?xf32", *PACK], ["'?'", "dynamic"]),
    (["128x256", *PACK], ["128x256", "element type"]),
    (["xf32", *PACK], ["xf32"]),
    (["128x256xf32", "--inner-dims-pos", "", "--inner-tiles", ""], []),  # no tiles: valid, identity
    (["128x256xf32", *PACK, "--padding-value", "abc"], ["abc"]),
    (["128x256xf32", "--inner-dims-pos", "0", "--inner-tiles", "3", "--padding-value", "nan"], []),
])
def test_illegal_packs(fails_clearly, succeeds, argv, names):
    if not names:
        assert "tensor<" in succeeds(["pack", *argv])
        return
    fails_clearly(["pack", *argv], *names)


@pytest.mark.parametrize("argv, names", [
    (["4x8x32x32xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "32,32", "--shape", "500x1000"],
     ["tensor<4x8x32x32>", "500x1000"]),
    (["4x8x32x32xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "16,32"], ["[16, 32]"]),
    (["4x8xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "32,32"], ["unpacked rank of 0"]),
    (["4x8x32x32xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "32,32", "--shape", "axb"],
     ["'a,b'", "integer"]),
    (["4x8x32x32xf32", "--inner-dims-pos", "0,1", "--inner-tiles", "32,32", "--shape", "129x256"],
     ["129"]),
    (["4x8x32x32xf32", "--inner-dims-pos", "1,1", "--inner-tiles", "32,32"], ["[1, 1]", "repeated"]),
])
def test_illegal_unpacks(fails_clearly, argv, names):
    fails_clearly(["unpack", *argv], *names)
