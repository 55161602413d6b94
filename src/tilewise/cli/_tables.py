"""Tables that fit the terminal: columns dropped by priority, long text wrapped, never cut.

A :class:`Column` has a *priority* (0: always shown; higher numbers are dropped first when the
table is wider than the terminal) and is either numeric (right-aligned, never wrapped, so a
time never shows as ``29…``) or text (wrapped inside its column when space is short).
:func:`print_table` keeps the most important columns that fit ``width`` and says which it
dropped; ``wide=True`` (``--wide``), or output to a pipe or a file, shows every column.
"""

from __future__ import annotations

from dataclasses import dataclass

# A rich table's frame: "│ " before each column, " " after it, and the closing "│".
_PER_COLUMN, _FRAME = 3, 1
# A wrapped text column keeps at least this many characters per line (or its longest word).
_MIN_TEXT = 10


@dataclass(frozen=True)
class Column:
    """One table column: ``name`` (header), ``priority`` (0: always kept; higher: dropped
    first), ``numeric`` (right-aligned, never wrapped or cut)."""

    name: str
    priority: int = 0
    numeric: bool = False


def _needed(col: Column, cells: list[str]) -> int:
    """Characters the column needs: all of a numeric one, a wrapped text one less."""
    texts = [col.name, *cells]
    full = max(len(t) for t in texts)
    if col.numeric:
        return full
    word = max((len(w) for t in texts for w in t.split()), default=1)
    return min(full, max(word, _MIN_TEXT))


def fit(columns: list[Column], rows: list[list[str]], width: int | None) -> list[int]:
    """Indices of the columns to show within ``width`` characters (None: all): the columns of
    the highest priority numbers are dropped first, never one of priority 0."""
    keep = list(range(len(columns)))
    if width is None:
        return keep
    need = [_needed(c, [r[i] for r in rows]) for i, c in enumerate(columns)]

    def total(idx):
        return sum(need[i] for i in idx) + _PER_COLUMN * len(idx) + _FRAME

    for i in sorted(keep, key=lambda i: -columns[i].priority):
        if total(keep) <= width or columns[i].priority == 0:
            break
        keep.remove(i)
    return keep


def print_table(out, title: str, columns: list[Column], rows: list[list[str]],
                wide: bool = False) -> None:
    """Print ``rows`` under ``columns`` on the rich console ``out``, fitted to its width when it
    is a terminal and ``wide`` is not set; a line after the table names any dropped column."""
    from rich.markup import escape
    from rich.table import Table

    width = out.width if out.is_terminal and not wide else None
    keep = fit(columns, rows, width)
    if out.is_terminal:  # the console soft-wraps (for files): word-wrap the title here
        out.print(title, style="italic", markup=False, soft_wrap=False)
    table = Table(title=None if out.is_terminal else title)
    for i in keep:
        c = columns[i]
        table.add_column(c.name, justify="right" if c.numeric else "left",
                         no_wrap=c.numeric, overflow="fold")
    for row in rows:
        table.add_row(*(escape(row[i]) for i in keep))
    if width is None:  # pipes and files get the whole table, not an 80-column squeeze
        out.width = max(out.width, _total_width(columns, rows))
    out.print(table)
    dropped = [c.name for i, c in enumerate(columns) if i not in keep]
    if dropped:
        out.print(f"({out.width} columns: not shown {', '.join(dropped)}; --wide shows every "
                  "column)", markup=False, soft_wrap=False)


def _total_width(columns: list[Column], rows: list[list[str]]) -> int:
    return sum(max(len(c.name), *(len(r[i]) for r in rows)) if rows else len(c.name)
               for i, c in enumerate(columns)) + _PER_COLUMN * len(columns) + _FRAME
