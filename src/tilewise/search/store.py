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
import sqlite3
import time

from .._version import __version__


def workload_key(workload) -> str:
    """Canonical text of a workload: its dims and ops plus every tensor with its dtype."""
    return workload.key


def arch_hash(arch) -> str:
    """First 16 hex digits of the SHA-256 of the arch's dict (sorted JSON)."""
    from ..arch.loader import arch_to_dict

    text = json.dumps(arch_to_dict(arch), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Store:
    """A SQLite file of results (path; created on first use)."""

    def __init__(self, path: str):
        self.path = str(path)
        self.db = sqlite3.connect(self.path, timeout=30.0)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA busy_timeout=30000")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS solutions (workload TEXT, arch TEXT, arch_hash TEXT, "
            "objective TEXT, version TEXT, result TEXT, seconds REAL, created REAL, "
            "PRIMARY KEY (workload, arch, arch_hash, objective, version))")
        self.db.commit()

    def _key(self, workload, arch, question):
        return (workload_key(workload), arch.name, arch_hash(arch), question, __version__)

    def get(self, workload, arch, question: str) -> dict | None:
        row = self.db.execute(
            "SELECT result FROM solutions WHERE workload=? AND arch=? AND arch_hash=? AND "
            "objective=? AND version=?", self._key(workload, arch, question)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, workload, arch, question: str, result_json: str, seconds: float) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO solutions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            self._key(workload, arch, question) + (result_json, seconds, time.time()))

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM solutions").fetchone()[0]

    def close(self) -> None:
        self.db.close()
