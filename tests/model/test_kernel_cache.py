"""The first-run check: is the cost model's kernel in numba's disk cache for this machine?"""

import shutil
import subprocess
import sys
from pathlib import Path

import tilewise as tw
from tilewise.cli import _util
from tilewise.model import cache

SRC = Path(tw.__file__).resolve().parent
PROBE = "from tilewise.model.cache import kernel_cached; print(kernel_cached())"


def _probe(pythonpath: Path) -> str:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         env={"PYTHONPATH": str(pythonpath), "PATH": ""}, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_fresh_copy_is_not_cached_and_a_compiled_one_is(tmp_path):
    tw.search(tw.gemm(64, 64, 64, dtype="i8"), "aie-4x2", top=1)  # compiled (or loaded) here
    assert cache.kernel_cached() is True
    # another process reads the index this one wrote (or loaded): same source, same CPU
    assert _probe(SRC.parent) == "True"
    # a copy without __pycache__ has nothing cached
    shutil.copytree(SRC, tmp_path / "tilewise", ignore=shutil.ignore_patterns("__pycache__"))
    assert _probe(tmp_path) == "False"


class _Tty:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_the_notice_is_printed_only_on_a_terminal_and_only_when_cold(monkeypatch):
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setattr(cache, "kernel_cached", lambda: False)
    _util.first_run_notice()
    assert tty.text.count("\n") == 1 and "compiling the cost model's kernels" in tty.text
    tty.text = ""
    for state in (True, None):  # cached, or numba's cache unreadable: say nothing
        monkeypatch.setattr(cache, "kernel_cached", lambda s=state: s)
        _util.first_run_notice()
    assert tty.text == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    monkeypatch.setattr(cache, "kernel_cached", lambda: False)
    _util.first_run_notice()
    assert tty.text == ""
