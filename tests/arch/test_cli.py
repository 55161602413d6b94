"""``tilewise arch list`` / ``tilewise arch show`` through the real entry point."""

import pytest

from tilewise.arch.loader import PRESET_DIR
from tilewise.cli import main


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich wraps to the terminal width; keep rows on one line


def test_list_shows_every_preset_with_peak(capsys):
    assert main(["arch", "list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert sorted(rows) == ["aie-4x2", "ascend-vec", "cpu-6core", "npu1", "npu2"]
    assert "ddr → memtile → core" in rows["aie-4x2"] and "4×2 core" in rows["aie-4x2"]
    assert "1.02 TMAC/s" in rows["aie-4x2"]           # 128 MAC x 1 GHz x 8 cores
    assert "5.12 TMAC/s" in rows["npu1"]              # 256 x 1 GHz x 20
    assert "8.19 TMAC/s" in rows["npu2"]              # 256 x 1 GHz x 32
    assert "614 GMAC/s" in rows["cpu-6core"]          # 32 x 3.2 GHz x 6
    assert "—" in rows["ascend-vec"]                  # no i8 MACs


def test_show_preset_tables_and_sources(capsys):
    assert main(["arch", "show", "aie-4x2"]) == 0
    out = capsys.readouterr().out
    assert "512 KiB" in out and "6 × 8 KiB (whole banks)" in out and "8 GiB/s" in out
    assert "array: 4 rows × 2 cols of 'core' = 8 cores; broadcast along: rows, cols" in out
    assert "alignment: m: 16, n: 8, k: 16" in out
    source_rows = [line for line in out.splitlines() if "levels[1].capacity" in line]
    assert len(source_rows) == 1 and "512 KiB" in source_rows[0] and "§III.B" in source_rows[0]


def test_show_yaml_prints_the_preset_file_with_comments(capsys):
    assert main(["arch", "show", "npu1", "--yaml"]) == 0
    assert capsys.readouterr().out == (PRESET_DIR / "npu1.yaml").read_text()


def test_show_a_file(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nlevels:\n  - {name: dram, capacity: unbounded}\n"
                    "  - {name: sram, capacity: 1 MiB, bandwidth: 10 GB/s}\n"
                    "compute: {clock: 500 MHz, macs_per_cycle: {i8: 16}}\n")
    assert main(["arch", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "mine" in out and "1 MiB" in out and "10 GB/s" in out and "array: none (1 core)" in out
    assert "8 GMAC/s" in out and "where the numbers come from" not in out  # no comments, no table
    assert main(["arch", "show", str(path), "--yaml"]) == 0
    assert capsys.readouterr().out == path.read_text()


def test_unknown_preset_is_one_error_line(capsys):
    assert main(["arch", "show", "aie-8x8"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("error: unknown architecture 'aie-8x8': no file of that name and not a "
                            "preset; did you mean 'aie-4x2'? presets: aie-4x2, ascend-vec, "
                            "cpu-6core, npu1, npu2, host\n")


def test_typo_in_yaml_file_is_one_error_line(tmp_path, capsys):
    path = tmp_path / "typo.yaml"
    path.write_text((PRESET_DIR / "aie-4x2.yaml").read_text().replace("bank_size:", "bank_sise:"))
    assert main(["arch", "show", str(path), "--yaml"]) == 2  # validated before printing
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "error: typo.yaml: levels[2]: unknown key 'bank_sise'; did you mean 'bank_size'?")
