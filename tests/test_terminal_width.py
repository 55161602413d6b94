"""Tables fit the terminal (issue 18): at 80 and 120 columns the search table drops its least
important columns (named in a note) and wraps text, numbers are never cut to `29…`; --wide
shows every column; search-many has a dtype column; arch show wraps instead of truncating.
Run in a pseudo-terminal of the given size, as a user sees them."""

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

import pytest

from tilewise.cli._tables import Column, fit

ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")
GEMM = ["search", "gemm", "--m", "512", "--n", "768", "--k", "768", "--top", "2"]


def _in_pty(argv: list[str], cols: int) -> str:
    """What `tilewise ARGV` shows in a terminal ``cols`` wide (escape codes removed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(TERM="xterm", NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "tilewise", *argv], stdin=slave, stdout=slave,
                            stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while select.select([master], [], [], 120)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=120) == 0
    os.close(master)
    text = ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))
    lines = [line.split("\r")[-1] for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    return "\n".join(lines[start - 2:])  # from the title on (the progress bar is above it)


def _table_lines(text: str) -> list[str]:
    """The table's lines: top border, header, rule, rows, bottom border."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    end = next(i for i, line in enumerate(lines) if line.startswith("└"))
    return lines[start:end + 1]


@pytest.mark.parametrize("cols", [80, 120])
def test_search_table_fits_the_terminal(cols):
    text = _in_pty(GEMM, cols)
    table = _table_lines(text)
    assert table and all(len(line) <= cols for line in text.splitlines()), text
    assert "…" not in text and "time µs" in table[1] and "304.84" in text
    assert "--wide shows every column" in text and "bytes in/out per level" not in table[1]
    if cols == 120:
        assert "double buffer" in table[1] and "util" in table[1]


def test_wide_shows_every_column():
    text = _in_pty([*GEMM, "--wide"], 80)
    header = _table_lines(text)[1]
    for name in ("orders", "K split", "util", "bytes in/out per level"):
        assert name in header, header
    assert "--wide shows" not in text


def test_search_many_has_a_dtype_column_and_fits(tmp_path):
    text = _in_pty(["search-many", "examples/problems.yaml", "--store",
                    str(tmp_path / "s.sqlite"), "--workers", "1"], 80)
    table = _table_lines(text)
    assert all(len(line) <= 80 for line in table) and "…" not in text
    assert "dtype" in table[1] and "i8→i32" in text and "i16→i32" in text


def test_arch_show_wraps_instead_of_truncating():
    text = _in_pty(["arch", "show", "npu1"], 60)
    assert "…" not in text and all(len(line) <= 60 for line in _table_lines(text))


def test_fit_drops_by_priority_and_keeps_priority_zero():
    cols = [Column("#", 0, True), Column("tiles"), Column("time", 0, True),
            Column("extra", 2), Column("more", 1)]
    rows = [["1", "m512 n768 k768", "304.84", "x" * 30, "y" * 20]]
    assert fit(cols, rows, None) == [0, 1, 2, 3, 4]
    assert fit(cols, rows, 60) == [0, 1, 2, 4]  # "extra" (priority 2) goes first
    assert fit(cols, rows, 10) == [0, 1, 2]  # never below the priority-0 columns
