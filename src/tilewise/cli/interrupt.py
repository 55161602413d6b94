"""Ctrl-C that is never lost.

Python turns SIGINT into ``KeyboardInterrupt`` at the next bytecode boundary. After a long C or
numba call (a reference matmul, a compile) that boundary can be a finalizer or a gc callback,
where the exception is printed as "Exception ignored" and dropped: a forced ``tilewise run``
then ran on to PASS under Ctrl-C in a cold CI clone. :func:`caught` keeps a flag that the
handler sets before raising, and :func:`check` (called where long work reports progress and
where it returns) raises again from ordinary code, so the command ends with exit code 130;
inside :func:`deferred` the handler only sets the flag.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

_INTERRUPTED = threading.Event()
_DEFERRED = [0]  # depth of deferred() blocks: there the handler only sets the flag


def _on_sigint(signum, frame) -> None:
    _INTERRUPTED.set()
    if not _DEFERRED[0]:
        raise KeyboardInterrupt


@contextmanager
def deferred():
    """Within (work that calls :func:`check` as it goes, e.g. a run reporting its tiles):
    Ctrl-C only sets the flag, and the next :func:`check` raises from ordinary code, never
    from a finalizer where Python would print a traceback and drop it."""
    _DEFERRED[0] += 1
    try:
        yield
    finally:
        _DEFERRED[0] -= 1


@contextmanager
def caught(exiting: bool = False):
    """Within: SIGINT sets the flag and raises ``KeyboardInterrupt`` (the main thread only;
    elsewhere nothing changes). The previous handler and a clear flag come back after, except
    when ``exiting`` (the process ends right after) and Ctrl-C came: then further presses are
    ignored, so a second Ctrl-C while the command ends cannot turn its exit code 130 and
    one-line message into a death by SIGINT."""
    _INTERRUPTED.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN if exiting and _INTERRUPTED.is_set() else old)
        _INTERRUPTED.clear()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if Ctrl-C came since :func:`caught` began, even when the
    first one was swallowed (module doc)."""
    if _INTERRUPTED.is_set():
        raise KeyboardInterrupt
