"""Engines: worker processes die with their driver; unknown engines and bad options are one
line; the Ray engine (local cluster started by the test) answers like the process engine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tilewise as tw
from tilewise.errors import TilewiseError
from tilewise.search import engines
from tilewise.search.many import search_many

SRC = Path(__file__).resolve().parents[2] / "src"


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_the_driver_leaves_no_worker_running(tmp_path):
    problems = tmp_path / "p.yaml"
    problems.write_text("arch: aie-4x2\nproblems:\n" + "".join(
        f"  - conv2d: {{c: 32, h: {h}, w: 28, k: 32, padding: 1}}\n" for h in (26, 27, 28, 29)))
    env = dict(os.environ, PYTHONPATH=str(SRC))
    driver = subprocess.Popen([sys.executable, "-m", "tilewise", "search-many", str(problems),
                               "--store", str(tmp_path / "s.sqlite"), "--workers", "2"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while len(workers) < 2 and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.1)
            workers = _children(driver.pid)
        assert len(workers) >= 2, "the driver started no workers"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "workers outlived their driver"
    finally:
        for w in _children(driver.pid) if driver.poll() is None else []:
            os.kill(w, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()


def test_engine_options_are_checked():
    with pytest.raises(TilewiseError, match="engine 'dask' unknown; valid: processes, ray"):
        engines.run(abs, [(1,)], print, engine="dask")
    with pytest.raises(TilewiseError, match="workers=0 must be a positive integer"):
        engines.run(abs, [(1,)], print, workers=0)
    with pytest.raises(TilewiseError, match="--address needs --engine ray"):
        engines.run(abs, [(1,)], print, address="10.0.0.1:6379")
    got = {}
    engines.run(abs, [(-1,), (-2,), (3,)], got.__setitem__, workers=2)
    assert got == {0: 1, 1: 2, 2: 3}


def test_ray_engine_on_a_local_cluster(tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ws = [tw.gemm(16, 8, 32), tw.gemm(32, 16, 16), tw.conv2d(1, 8, 6, 6, 8, 3, 3, padding=1)]
        db = tmp_path / "s.sqlite"
        got = search_many(ws, "aie-4x2", top=1, store=str(db), engine="ray")
        for w, r in zip(ws, got):
            want = tw.search(w, "aie-4x2", top=1)
            assert r.best.mapping == want.best.mapping and r.best.cost == want.best.cost
        again = search_many(ws, "aie-4x2", top=1, store=str(db), engine="ray")
        assert [r.cached for r in again] == [True] * 3
    finally:
        ray.shutdown()
