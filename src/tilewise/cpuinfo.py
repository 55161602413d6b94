"""Fields of ``/proc/cpuinfo`` (Linux; empty elsewhere), read in one place: the host
architecture (:mod:`tilewise.arch.host`: model name, flags, clock) and the pack kernels'
per-vendor tuning (:mod:`tilewise.layout.kernels`: ``vendor_id``)."""

from __future__ import annotations

import re
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def text() -> str:
    """The whole of /proc/cpuinfo ('' when it cannot be read)."""
    try:
        return CPUINFO.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def field(name: str, source: str | None = None) -> str:
    """The first ``name : value`` of /proc/cpuinfo, or of ``source`` (its text) when given
    ('' when absent)."""
    source = text() if source is None else source
    m = re.search(rf"^{re.escape(name)}\s*:\s*(.*)$", source, re.MULTILINE)
    return m.group(1).strip() if m else ""
