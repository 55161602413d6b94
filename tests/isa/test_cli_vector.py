from tilewise.cli import main


def test_plan_command_prints_ascend_c(capsys):
    assert main(["vector", "plan", "add", "--dtype", "f16", "--rows", "30", "--cols", "100",
                 "--pitch", "128", "--check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Add(dst[0], src0[0], src1[0], 100, 30, {1, 1, 1, 8, 8, 8});"
    assert "equals numpy" in out[-1]


def test_plan_counter_and_scalar(capsys):
    assert main(["vector", "plan", "adds", "--dtype", "f32", "--cols", "1001", "--scalar", "2",
                 "--check"]) == 0
    out = capsys.readouterr().out
    assert "SetMaskCount();" in out and "SetVectorMask<float, MaskMode::COUNTER>(1001);" in out


def test_plan_errors_are_one_line(capsys):
    assert main(["vector", "plan", "exp", "--dtype", "i16", "--cols", "8"]) == 2
    err = capsys.readouterr().err
    assert err == "error: Exp does not support element type i16; supported: f16, f32\n"


def test_copy_command(capsys):
    assert main(["vector", "copy", "--gm", "128,256", "--origin", "0,64", "--size", "64,64",
                 "--ub-pitch", "64"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "DataCopy(ub[0], gm[64], {64, 4, 12, 0});"
    assert main(["vector", "copy", "--gm", "128", "--size", "1,1"]) == 2
    assert "two comma-separated integers" in capsys.readouterr().err


def test_plan_in_place_and_poison(capsys):
    # out of place: one instruction of 56 overlapping repeats, checked with masked lanes poisoned
    assert main(["vector", "plan", "add", "--cols", "1000", "--no-counter", "--check",
                 "--poison"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Add(dst[0], src0[0], src1[0], 120, 56, {1, 1, 1, 1, 1, 1});"
    assert out[1].startswith("// 1 vector instruction(s), 56 repeat(s), 0 in counter mode;")
    assert out[2] == "// check: simulated result equals numpy; masked-off lanes poisoned"
    # in place each element is computed once: no overlapping repeats
    assert main(["vector", "plan", "add", "--cols", "1000", "--no-counter", "--in-place",
                 "--check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["Add(dst[0], src0[0], src1[0], 80, 11, {1, 1, 1, 5, 5, 5});",
                       "Add(dst[880], src0[880], src1[880], 120, 1, {1, 1, 1, 8, 8, 8});"]
    assert out[2].endswith("operands at UB bytes 0, 0, 4544 (in place)")
    assert main(["vector", "plan", "duplicate", "--cols", "8", "--scalar", "1", "--in-place"]) == 2
    assert "Duplicate has no source to be in place with" in capsys.readouterr().err
