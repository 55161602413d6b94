"""Run every ``$ tilewise ...`` example of the README and docs/ and compare its output.

A docs example is a fenced ``text`` block whose lines starting with ``$ tilewise`` are commands
(a trailing backslash continues one on the next line) and whose following lines, up to the
next command, are what it prints: stdout, then stderr, then ``exit code N`` when it is not 0.
In the expected text a line ``...`` stands for any number of lines (an elided table), and wall
times (``0.94 s``) match any time. A block preceded by ``<!-- docs: no-run -->`` is not run
(it needs a network model, Ray, IREE, a plot viewer or minutes of work; say why next to it).

    python scripts/docs_examples.py            # check; exit 1 listing the stale examples
    python scripts/docs_examples.py --update   # rewrite stale outputs from real runs

Tables are drawn 120 columns wide (``COLUMNS``). Commands run in-process (:func:`tilewise.cli.main`) in a scratch folder holding links to the
repository's ``examples``, ``benchmarks`` and ``.venv``, one block after another, so a block may use a file
an earlier command of the same block wrote.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NO_RUN = "<!-- docs: no-run -->"
WALL = re.compile(r"\b\d+(?:\.\d+)? s\b")
FENCE = re.compile(r"^```text\n(.*?)^```", re.S | re.M)


@dataclass
class Example:
    """One command of a block: its text (as written), argv, and the expected output lines."""

    path: Path
    line: int
    command: str
    argv: list[str]
    expected: list[str]


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(text: str):
    """``(start offset, body)`` of every text block that is to be run."""
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip().splitlines()
        if before and before[-1].strip() == NO_RUN:
            continue
        if re.search(r"^\$ tilewise ", m.group(1), re.M):
            yield m.start(1), m.group(1)


def examples(path: Path, start: int, body: str) -> list[Example]:
    out: list[Example] = []
    lines = body.splitlines()
    first_line = path.read_text(encoding="utf-8")[:start].count("\n") + 1
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ tilewise "):
            i += 1
            continue
        line = first_line + i
        cmd = lines[i][2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        i += 1
        exp = []
        while i < len(lines) and not lines[i].startswith("$ "):
            exp.append(lines[i])
            i += 1
        out.append(Example(path, line, cmd, shlex.split(cmd, comments=True)[1:], exp))
    return out


def run(argv: list[str]) -> list[str]:
    """Output lines of ``tilewise argv``: stdout, stderr, ``exit code N`` when not 0."""
    from tilewise.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except Exception as e:  # a traceback is a bug of its own: show it as the output
            print(f"TRACEBACK {type(e).__name__}: {e}", file=sys.stderr)
            code = -1
    lines = out.getvalue().splitlines() + err.getvalue().splitlines()
    return lines + ([f"exit code {code}"] if code else [])


def matches(expected: list[str], got: list[str]) -> bool:
    """Line by line, ``...`` matching any run of lines, wall times matching any time; a
    command shown without output (the text around it describes it) only has to succeed."""
    if not expected:
        return not any(g.startswith(("exit code", "TRACEBACK")) for g in got)
    norm = lambda s: WALL.sub("<t>", s.rstrip())
    pattern = "".join(r"(?:.*\n)*?" if e.strip() == "..." else re.escape(norm(e)) + r"\n"
                      for e in expected)
    return re.fullmatch(pattern, "".join(norm(g) + "\n" for g in got)) is not None


def check(update: bool = False, only: str | None = None) -> list[str]:
    """Run every example; returns "file:line: command" of each stale one (rewritten from
    the run with ``update``)."""
    stale = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("examples", "benchmarks", ".venv"):
            if (ROOT / name).exists():
                os.symlink(ROOT / name, Path(scratch) / name)
        cwd = os.getcwd()
        os.chdir(scratch)
        try:
            for path in doc_files():
                text = path.read_text(encoding="utf-8")
                new = text
                for start, body in blocks(text):
                    if only and only not in str(path):
                        continue
                    for ex in examples(path, start, body):
                        got = run(ex.argv)
                        if matches(ex.expected, got):
                            continue
                        stale.append(f"{path.relative_to(ROOT)}:{ex.line}: {ex.command}")
                        if update and ex.expected:  # an elided block is written out whole
                            old = "\n".join(ex.expected)
                            new = new.replace(f"{old}\n", "\n".join(got) + "\n", 1) if old else new
                if update and new != text:
                    path.write_text(new, encoding="utf-8")
        finally:
            os.chdir(cwd)
    return stale


def main(argv=None) -> int:
    os.environ.setdefault("COLUMNS", "120")  # tables as wide as in the docs, whatever the terminal
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="rewrite stale outputs")
    ap.add_argument("--only", help="only files whose path contains this")
    args = ap.parse_args(argv)
    stale = check(args.update, args.only)
    for s in stale:
        print(("updated " if args.update else "stale ") + s)
    print(f"{len(stale)} stale example(s)")
    return 1 if stale and not args.update else 0


if __name__ == "__main__":
    sys.exit(main())
