"""Small helpers shared by the CLI command modules."""

from __future__ import annotations

import os

from ..errors import ParseError, TilewiseError
from . import interrupt


def output_path(path: str | None, option: str) -> str | None:
    """``path`` if a file can be written there, checked before any work starts; else one
    TilewiseError naming the option, the path and why (its folder is missing, it is a folder,
    the folder is not writable)."""
    if path is None:
        return None
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise TilewiseError(f"{option} {path!r} is a folder; give a file name such as out.png")
    if not os.path.isdir(folder):
        raise TilewiseError(f"{option} {path!r}: folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise TilewiseError(f"{option} {path!r} is not writable")
    return path


def save_figure(fig, path: str, option: str) -> None:
    """``fig.savefig(path)`` with a failed write as one TilewiseError (layout.render.save_png)."""
    from ..layout.render import save_png

    save_png(fig, path, option)


def parse_int_list(text: str, what: str, *, allow_empty: bool = True) -> tuple[int, ...]:
    """Parse ``"0,1,2"`` (or ``"[0, 1, 2]"``) into a tuple of ints; errors point at the character."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    if not body.strip():
        if allow_empty:
            return ()
        raise ParseError(what, text, 0, "a comma-separated list of integers")
    out, pos = [], text.find(body)
    for part in body.split(","):
        stripped = part.strip()
        try:
            out.append(int(stripped))
        except ValueError:
            raise ParseError(what, text, pos + part.find(stripped) if stripped else pos,
                             "an integer") from None
        pos += len(part) + 1
    return tuple(out)


def console(stderr: bool = False):
    """A rich console (created on demand: rich is imported only by commands that print tables)."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def first_run_notice() -> None:
    """One line on stderr, when it is a terminal, if the cost model's compiled kernels are not
    in numba's cache for this machine yet (:func:`tilewise.model.cache.kernel_cached`): the
    command then compiles them first, for minutes, with nothing else to show."""
    import sys

    if not sys.stderr.isatty():
        return
    from ..model.cache import kernel_cached

    if kernel_cached() is False:
        print(f"note: first run on this machine (or after an update): compiling the cost "
              f"model's kernels into numba's cache, {COLD_COMPILE}; later runs start at once",
              file=sys.stderr, flush=True)


# measured from a fresh clone on the 2-core development VM (README, Quickstart)
COLD_COMPILE = "about 3-4 minutes"


def progress(what: str):
    """``(bar, callback(done, total))``: a rich progress bar on stderr when it is a terminal,
    else ``(None, None)`` (never in tests or CI logs). Stop the bar with ``bar.stop()``.
    Says first when the kernels must be compiled (:func:`first_run_notice`)."""
    import sys

    if not sys.stderr.isatty():
        return None, None
    first_run_notice()
    from rich.progress import Progress

    bar = Progress(console=console(stderr=True), transient=True)
    task = bar.add_task(what, total=None)
    bar.start()
    def update(done, total):
        interrupt.check()  # a Ctrl-C during a long call below ends the work here
        bar.update(task, completed=done, total=total)

    return bar, update
