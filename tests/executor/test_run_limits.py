"""Large executions (issue 18): `tilewise run` estimates the work, refuses beyond the
documented limits unless --force, shows progress, and Ctrl-C ends it with one line."""

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

import pytest

import tilewise as tw
from tilewise.cli import main
from tilewise.executor.interpreter import (MAX_RUN_BYTES, MAX_RUN_TILES, RunSize,
                                           compute_tiles, execute)
from tilewise.simulation.walker import Compute, walk

BIG = {"workload": {"gemm": {"m": 4096, "n": 4096, "k": 4096}}, "arch": "aie-4x2",
       "mapping": "ddr[m4096 n4096 k4096] mnk | memtile[m128 n32 k1024] mnk | "
                  "core[m32 n16 k256] ; rows=k4 cols=m2"}


@pytest.mark.parametrize("workload", [
    tw.gemm(100, 72, 40, dtype="i8"), tw.gemm_chain(32, 48, 40, 24, dtype="i8"),
    tw.mha(64, 32, 32, dtype="i8"), tw.layernorm(40, 96, dtype="i8"),
    tw.conv2d(1, 8, 16, 10, 10, 3, 3, dtype="i8"),
], ids=lambda w: w.name)
def test_compute_tiles_counts_the_executors_tiles(workload):
    m = tw.search(workload, "aie-4x2", top=1).best.mapping
    events = sum(isinstance(e, Compute) for e in walk(workload, tw.load_arch("aie-4x2"), m))
    assert compute_tiles(workload, m, "aie-4x2") == events


def test_progress_counts_tiles_up_to_the_estimate():
    w = tw.gemm(256, 128, 64, dtype="i8")
    m = tw.search(w, "aie-4x2", top=1).best.mapping
    seen = []
    execute(w, m, arch="aie-4x2", progress=seen.append)
    assert seen[-1] == compute_tiles(w, m, "aie-4x2") and seen == sorted(seen) and len(seen) > 1


def test_run_refuses_a_large_problem_at_once(tmp_path, capsys):
    sol = tmp_path / "big.json"
    sol.write_text(json.dumps(BIG))
    t = time.perf_counter()
    assert main(["run", str(sol)]) == 2
    err = capsys.readouterr().err
    assert time.perf_counter() - t < 30  # no tile was executed
    assert err.count("\n") == 1 and "524,288 core tiles" in err and "--force" in err


def test_limits_in_bytes_and_tiles():
    assert RunSize(MAX_RUN_TILES, MAX_RUN_BYTES).refusal() is None
    assert "above the limit" in RunSize(MAX_RUN_TILES + 1, 0).refusal()
    assert "GiB" in RunSize(1, MAX_RUN_BYTES + 1).refusal()


def test_ctrl_c_ends_a_forced_run_with_one_line(tmp_path):
    """In a terminal: the progress bar runs, Ctrl-C (SIGINT to the foreground group) ends the
    run with exit code 130 and one line, no traceback."""
    sol = tmp_path / "big.json"
    sol.write_text(json.dumps(BIG))
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tilewise", "run", str(sol), "--force"],
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                            start_new_session=True, env=dict(os.environ, TERM="xterm"))
    os.close(slave)
    chunks, start, sent, seen = [], time.time(), None, None
    while proc.poll() is None or select.select([master], [], [], 0)[0]:
        text = b"".join(chunks).decode("utf-8", "replace")
        # the bar drawn (its "%"), or 0.3 s after the run announced itself
        if "executing" in text and seen is None:
            seen = time.time()
        due = sent is None and ("executing" in text and ("%" in text or time.time() - seen > 0.3)
                                or time.time() - start > 300)  # cold caches: minutes
        # again every 2 s while it runs: with cold caches the first Ctrl-C can land while
        # numba compiles the executor's kernels, which swallows it (CI, stop 26)
        due = due or sent is not None and proc.poll() is None and time.time() - sent > 2.0
        if due:
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:  # it ended in between
                pass
            sent = time.time()
        if select.select([master], [], [], 0.5)[0]:
            try:
                chunks.append(os.read(master, 65536))
            except OSError:
                break
    os.close(master)
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", b"".join(chunks).decode("utf-8", "replace"))
    assert proc.wait(timeout=60) == 130, text[-500:]
    assert "executing 524,288 tiles" in text and "Traceback" not in text
    assert text.strip().splitlines()[-1] == "error: interrupted (Ctrl-C)"


def test_a_swallowed_ctrl_c_is_raised_again(monkeypatch):
    """A KeyboardInterrupt dropped on the way (Python raises it at the next bytecode, which
    after a long C call can be a finalizer that only prints it) still ends the command:
    ``interrupt.check`` raises it again from ordinary code, and ``main`` exits 130."""
    import signal

    import tilewise.cli as cli
    from tilewise.cli import interrupt

    def swallow():
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # swallowed, as a finalizer does

    with interrupt.caught():
        swallow()
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
    interrupt.check()  # cleared on the way out, the old handler back
    assert signal.getsignal(signal.SIGINT) is not interrupt._on_sigint

    monkeypatch.setattr(cli.app, "main", lambda **kw: swallow() or 0)  # a command that ends well
    assert cli.main(["--version"]) == 130


def test_a_ctrl_c_in_deferred_work_waits_for_the_next_check():
    """Inside ``deferred`` (a run whose progress callback checks), Ctrl-C sets the flag only:
    nothing is raised where Python could drop it, and the next check raises it."""
    import signal

    from tilewise.cli import interrupt

    with interrupt.caught():
        with interrupt.deferred():
            signal.raise_signal(signal.SIGINT)  # no KeyboardInterrupt here
            with pytest.raises(KeyboardInterrupt):
                interrupt.check()
        with pytest.raises(KeyboardInterrupt):  # outside deferred, the handler raises again
            signal.raise_signal(signal.SIGINT)
