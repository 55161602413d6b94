"""The solution store: one SQLite file of search results, keyed by problem.

Seed 003: "for a list of problems we create a dictionary of solutions". A row is keyed by
(workload canonical text, arch name, hash of the arch's full dict, the question — objective,
top and constraints as one text, see :func:`tilewise.search_many` — and the tilewise version), so a changed arch spec or a new tool version never returns a stale answer. The file
is opened in WAL mode with a busy timeout, so readers and one writer can share it; in
:func:`tilewise.search_many` only the parent process writes.

    >>> store = Store("solutions.sqlite")
    >>> store.get(workload, arch, question)      # None, or the Result JSON as a dict
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import warnings

from .._version import __version__
from ..errors import StoreError


def workload_key(workload) -> str:
    """Canonical text of a workload: its dims and ops plus every tensor with its dtype."""
    return workload.key


def arch_hash(arch) -> str:
    """First 16 hex digits of the SHA-256 of the arch's dict (sorted JSON)."""
    from ..arch.loader import arch_to_dict

    text = json.dumps(arch_to_dict(arch), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Store:
    """A SQLite file of results (path; created on first use). A path that cannot be opened or
    a file that is not a tilewise store raises :class:`StoreError` naming it and what to do; a
    row whose result does not parse is skipped with a warning (and recomputed by the caller)."""

    def __init__(self, path: str):
        self.path = str(path)
        folder = os.path.dirname(os.path.abspath(self.path))
        if os.path.isdir(self.path):
            raise StoreError(f"solution store {self.path!r} is a folder; give a file path")
        if not os.path.isdir(folder):
            raise StoreError(f"solution store {self.path!r}: folder {folder!r} does not exist")
        try:
            self.db = sqlite3.connect(self.path, timeout=30.0)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA busy_timeout=30000")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS solutions (workload TEXT, arch TEXT, arch_hash TEXT, "
                "objective TEXT, version TEXT, result TEXT, seconds REAL, created REAL, "
                "PRIMARY KEY (workload, arch, arch_hash, objective, version))")
            self.db.execute("SELECT workload, arch, arch_hash, objective, version, result, "
                            "seconds, created FROM solutions LIMIT 1").fetchall()
            self.db.commit()
        except sqlite3.Error as e:
            raise StoreError(f"solution store {self.path!r} cannot be used ({e}): it is not a "
                             "tilewise SQLite store or it is damaged; move it aside or give "
                             "another --store path") from None

    def _key(self, workload, arch, question):
        return (workload_key(workload), arch.name, arch_hash(arch), question, __version__)

    def get(self, workload, arch, question: str) -> dict | None:
        row = self.db.execute(
            "SELECT result FROM solutions WHERE workload=? AND arch=? AND arch_hash=? AND "
            "objective=? AND version=?", self._key(workload, arch, question)).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
            if not isinstance(data, dict) or "top" not in data:
                raise ValueError("not a search result")
        except (TypeError, ValueError) as e:
            warnings.warn(f"solution store {self.path}: a bad row for {workload_key(workload)} "
                          f"on {arch.name} is ignored and recomputed ({e})", stacklevel=2)
            return None
        return data

    def put(self, workload, arch, question: str, result_json: str, seconds: float) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO solutions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            self._key(workload, arch, question) + (result_json, seconds, time.time()))

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM solutions").fetchone()[0]

    def close(self) -> None:
        self.db.close()
