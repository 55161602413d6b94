"""Reading a user's text file (arch YAML, problem list, solution or measurement JSON) with one
clear error: a missing file, a folder, an unreadable file or bytes that are not UTF-8 each
become the caller's error type naming the file and what went wrong, never a traceback."""

from __future__ import annotations

import os

from .errors import TilewiseError


def read_text(path: str | os.PathLike, what: str, error: type[TilewiseError] = TilewiseError) -> str:
    """The UTF-8 text of ``path``; ``error`` (a TilewiseError subclass) whose message names
    ``what`` (e.g. ``"architecture file"``), the path and the reason otherwise."""
    name = os.fspath(path)
    if os.path.isdir(name):
        raise error(f"{what} {name!r} is a folder; give a file")
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as e:
        raise error(f"cannot read {what} {name!r}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{what} {name!r} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                    f"{e.start}); is it a binary file? save it as UTF-8") from None


def yaml_problem(error: Exception, source: str) -> str:
    """One line for a YAML parse error: ``source:line:col: YAML syntax error: what`` (PyYAML's
    own message spans several lines with a caret picture)."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
    parts = [getattr(error, "context", None), getattr(error, "problem", None)]
    problem = " ".join(str(p) for p in parts if p) or str(error).splitlines()[0]
    return f"{where}: YAML syntax error: {problem}"
