"""Where independent tasks run: local worker processes (default) or a Ray cluster.

:func:`run` calls ``fn(*args)`` for every tuple of ``tasks`` and hands each answer to
``on_result(index, value)`` *in this process* as it arrives, so the caller (the driver) alone
writes the solution store: a worker that dies loses only its running task, and a rerun finds
every finished one in the store.

- ``engine="processes"``: a ``ProcessPoolExecutor`` of ``workers`` processes (None: all
  cores). Each worker dies with its driver: on Linux the kernel sends it SIGKILL when the
  driver exits (``prctl(PR_SET_PDEATHSIG)``), elsewhere a watcher thread polls the parent pid
  once a second; so ``kill -9`` of ``tilewise search-many`` leaves no worker behind.
- ``engine="ray"``: one Ray task per item on the cluster at ``address`` ("HOST:PORT", "auto";
  None: a local cluster started here, ``workers`` CPUs), ``pip install tilewise[ray]``. Ray
  retries a task whose worker died (3 times).

``workers=1`` with the process engine runs in this process (no pool).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable

from ..errors import TilewiseError

ENGINES = ("processes", "ray")
_PR_SET_PDEATHSIG = 1


def run(fn: Callable, tasks: list[tuple], on_result: Callable, engine: str = "processes",
        workers: int | None = None, address: str | None = None) -> None:
    """Run ``fn(*task)`` for each task; ``on_result(index, value)`` in this process."""
    if engine not in ENGINES:
        raise TilewiseError(f"engine {engine!r} unknown; valid: {', '.join(ENGINES)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise TilewiseError(f"workers={workers!r} must be a positive integer or None (all cores)")
    if engine == "ray":
        return _run_ray(fn, tasks, on_result, workers, address)
    if address is not None:
        raise TilewiseError("--address needs --engine ray (the process engine runs on this machine)")
    n = min(workers or os.cpu_count() or 1, len(tasks))
    if n <= 1:
        for i, t in enumerate(tasks):
            on_result(i, fn(*t))
        return
    with ProcessPoolExecutor(max_workers=n, initializer=die_with_parent,
                             initargs=(os.getpid(),)) as pool:
        futures = {pool.submit(fn, *t): i for i, t in enumerate(tasks)}
        try:
            for f in as_completed(futures):
                on_result(futures[f], f.result())
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def die_with_parent(parent: int) -> None:
    """Pool initializer: end this worker when process ``parent`` ends (see the module doc)."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the watcher below does it
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _run_ray(fn, tasks, on_result, workers, address) -> None:
    try:
        import ray
    except ImportError:
        raise TilewiseError("--engine ray needs Ray: pip install 'tilewise[ray]'") from None
    if not ray.is_initialized():
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=workers or os.cpu_count(), log_to_driver=False,
                         include_dashboard=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise TilewiseError(f"cannot start or reach a Ray cluster at {address or 'local'}: "
                                f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    remote = ray.remote(max_retries=3)(fn)
    pending = {remote.remote(*t): i for i, t in enumerate(tasks)}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            on_result(pending.pop(ref), ray.get(ref))
