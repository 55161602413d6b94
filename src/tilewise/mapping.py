"""Mappings: how a workload is tiled over an architecture's memory levels and core array.

A :class:`Mapping` has one :class:`LevelMapping` per memory level, outermost first, and an
optional spatial split per array axis. At level ``i``:

- ``tiles``: the tile (subvolume) resident at that level, elements per dim. Level 0 holds the
  whole problem. Tiles need not divide their parent: the last tile of a loop is partial.
  At the array level the tile is per core.
- ``order``: the loops (outermost first) iterating the level ``i+1`` tiles inside a level-``i``
  tile; a permutation of all dims. The innermost level has no loops (its tile is computed).
- ``bypass``: tensors not stored at this level (streamed between its neighbours);
  ``double_buffer``: tensors given a second (ping/pong) buffer there.
- ``pack`` (the outermost level only): tensors stored there packed by their tile at the first
  level below that keeps them (MLIR ``linalg.pack`` with ``inner_tiles`` = that tile), so each
  tile crosses as one contiguous run, at the price of a pack pass (an output: an unpack pass);
  :mod:`tilewise.model.contiguity`.

``rows`` / ``cols``: the dim split across the array's rows axis (core row ``r`` gets slice ``r``)
and columns axis, and into how many ways; the loops of the level above the array then step over
*array tiles* of ``ways x core tile``. Seed 003's triplet (P, m, c) is the tiles at DDR,
memtile and core (:meth:`Mapping.from_triplet`).

Text form (round-trips: ``Mapping.parse(str(m)) == m``)::

    ddr[m512 n768 k768] mnk | memtile[m256 n192 k768] nmk db:B | core[m64 n48 k64] db:A,B ; rows=n4 cols=m2
    dram[m512 n512 k512] mnk pack:A,B | l3[m128 n128 k512] ...

Levels are separated by ``|``, the spatial part follows ``;``. A loop order is the dim names
concatenated when all are single letters (``mnk``), else comma-separated (``m,n,kv``).

A Mapping is a value: whether it is legal for a workload and an arch is the model's rule,
:func:`tilewise.model.legality.validate`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Iterable, Mapping as TMapping, Sequence

from .errors import MappingError, ParseError
from .ir.workload import as_int as _as_int  # numpy integers become ints (equality, JSON)


@dataclass(frozen=True)
class Spatial:
    """``dim`` split ``ways`` ways across one array axis."""

    dim: str
    ways: int

    def __post_init__(self):
        object.__setattr__(self, "ways", _as_int(self.ways))

    def __str__(self) -> str:
        return f"{self.dim}{self.ways}"


@dataclass(frozen=True)
class LevelMapping:
    """Tiles, loop order, bypassed and double-buffered tensors at one memory level."""

    level: str
    tiles: tuple[tuple[str, int], ...]
    order: tuple[str, ...] = ()
    bypass: frozenset[str] = frozenset()
    double_buffer: frozenset[str] = frozenset()
    pack: frozenset[str] = frozenset()

    def __post_init__(self):
        tiles = self.tiles.items() if isinstance(self.tiles, TMapping) else self.tiles
        object.__setattr__(self, "tiles", tuple((str(d), _as_int(t)) for d, t in tiles))
        object.__setattr__(self, "order", tuple(self.order))
        object.__setattr__(self, "bypass", frozenset(self.bypass))
        object.__setattr__(self, "double_buffer", frozenset(self.double_buffer))
        object.__setattr__(self, "pack", frozenset(self.pack))

    @property
    def sizes(self) -> dict[str, int]:
        """``{dim: tile elements}``."""
        return dict(self.tiles)

    def __str__(self) -> str:
        text = f"{self.level}[{' '.join(f'{d}{t}' for d, t in self.tiles)}]"
        if self.order:
            sep = "" if all(len(d) == 1 for d in self.order) else ","
            text += " " + sep.join(self.order)
        if self.double_buffer:
            text += " db:" + ",".join(sorted(self.double_buffer))
        if self.bypass:
            text += " bypass:" + ",".join(sorted(self.bypass))
        if self.pack:
            text += " pack:" + ",".join(sorted(self.pack))
        return text


@dataclass(frozen=True)
class Mapping:
    """A complete mapping: per-level tiling plus the spatial split of the array level."""

    levels: tuple[LevelMapping, ...]
    rows: Spatial | None = None
    cols: Spatial | None = None

    def __post_init__(self):
        object.__setattr__(self, "levels", tuple(self.levels))

    # ----- text and JSON -----

    def __str__(self) -> str:
        text = " | ".join(map(str, self.levels))
        spatial = [f"{k}={v}" for k, v in (("rows", self.rows), ("cols", self.cols)) if v]
        return text + (" ; " + " ".join(spatial) if spatial else "")

    @classmethod
    def parse(cls, text: str) -> "Mapping":
        """Parse the text form; ParseError points at the offending character."""
        if not isinstance(text, str):
            raise MappingError(f"a mapping's text form is a string such as \"ddr[m64 n64 k64] mnk "
                               f"| ...\", got {type(text).__name__} {text!r}")
        return _Parser(text).mapping()

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def to_dict(self) -> dict:
        return {
            "levels": [
                {"level": lv.level, "tiles": dict(lv.tiles), "order": list(lv.order),
                 "bypass": sorted(lv.bypass), "double_buffer": sorted(lv.double_buffer),
                 **({"pack": sorted(lv.pack)} if lv.pack else {})}
                for lv in self.levels
            ],
            "rows": [self.rows.dim, self.rows.ways] if self.rows else None,
            "cols": [self.cols.dim, self.cols.ways] if self.cols else None,
        }

    @classmethod
    def from_json(cls, text: str | dict) -> "Mapping":
        """Inverse of :meth:`to_json` (accepts the JSON text or the parsed dict)."""
        try:
            data = json.loads(text) if isinstance(text, str) else text
        except json.JSONDecodeError as e:
            raise MappingError(f"mapping JSON {text[:40]!r} does not parse: {e.msg} at line "
                               f"{e.lineno} column {e.colno}") from None
        try:
            levels = tuple(
                LevelMapping(lv["level"], tuple((d, int(t)) for d, t in lv["tiles"].items()),
                             tuple(lv.get("order", ())), frozenset(lv.get("bypass", ())),
                             frozenset(lv.get("double_buffer", ())),
                             frozenset(lv.get("pack", ())))
                for lv in data["levels"])
            sp = {k: Spatial(data[k][0], int(data[k][1])) if data.get(k) else None
                  for k in ("rows", "cols")}
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise MappingError(f"mapping JSON is malformed ({type(e).__name__}: {e}); expected "
                               "{'levels': [{'level', 'tiles', 'order', 'bypass', "
                               "'double_buffer', 'pack'}], 'rows': [dim, ways] | null, "
                               "'cols': ...}") from None
        return cls(levels, sp["rows"], sp["cols"])

    # ----- construction -----

    @classmethod
    def from_triplet(cls, workload, arch, P, m, c, orders: Sequence[str] | None = None,
                     rows: str | None = None, cols: str | None = None,
                     double_buffer: Sequence[Iterable[str]] | None = None) -> "Mapping":
        """Seed 003's (P, m, c): tiles at DDR, memtile and core of a 3-level arch.

        ``P``, ``m``, ``c`` are dicts ``{dim: elements}`` or sequences in workload dim order;
        ``orders`` the loop orders at the two outer levels (default: workload dim order);
        ``rows``/``cols`` spatial splits as text (``"n4"``); ``double_buffer`` per level.
        """
        if len(arch.levels) != 3:
            raise MappingError(f"a (P, m, c) triplet needs a 3-level arch; {arch.name} has "
                               f"{len(arch.levels)} levels ({', '.join(l.name for l in arch.levels)})")
        dims = list(workload.sizes)
        tiles = []
        for what, t in (("P", P), ("m", m), ("c", c)):
            t = dict(t) if isinstance(t, TMapping) else dict(zip(dims, t))
            if set(t) != set(dims):
                raise MappingError(f"triplet {what} gives dims {sorted(t)}; need exactly {dims}")
            tiles.append(tuple((d, t[d]) for d in dims))
        orders = list(orders or ["".join(dims) if all(len(d) == 1 for d in dims) else ",".join(dims)] * 2)
        db = list(double_buffer or [(), (), ()])
        levels = []
        for i, lv in enumerate(arch.levels):
            order = _split_order(orders[i], dims) if i < 2 else ()
            levels.append(LevelMapping(lv.name, tiles[i], order, frozenset(), frozenset(db[i])))
        return cls(tuple(levels), _spatial(rows), _spatial(cols))


def as_mapping(value, argument: str = "mapping") -> Mapping:
    """The one mapping coercion of the entry points: a Mapping as is, its text form parsed
    (ParseError points at the character), its JSON dict read; MappingError otherwise."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        return Mapping.parse(value)
    if isinstance(value, dict):
        return Mapping.from_json(value)
    raise MappingError(f"{argument} must be a Mapping, its text form (\"ddr[m64 n64 k64] mnk | "
                       f"...\") or its JSON dict, got {type(value).__name__} {value!r}")


def _spatial(text: str | None) -> Spatial | None:
    if text is None:
        return None
    m = re.fullmatch(r"([a-z]+)(\d+)", text.strip())
    if not m:
        raise ParseError("spatial split", text, 0, "a dim followed by ways, e.g. n4")
    return Spatial(m.group(1), int(m.group(2)))


def _split_order(text: str, dims: Sequence[str]) -> tuple[str, ...]:
    if "," in text:
        return tuple(p.strip() for p in text.split(","))
    if text in dims:
        return (text,)
    return tuple(text)


class _Parser:
    """Recursive-descent parser of the mapping text form, tracking character positions."""

    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def error(self, expected: str, pos: int | None = None):
        raise ParseError("mapping", self.text, self.pos if pos is None else pos, expected)

    def ws(self):
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def match(self, pattern: str, expected: str) -> str:
        m = re.compile(pattern).match(self.text, self.pos)
        if not m:
            self.error(expected)
        self.pos = m.end()
        return m.group(0)

    def mapping(self) -> Mapping:
        levels = [self.level()]
        self.ws()
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            self.ws()
            levels.append(self.level())
            self.ws()
        rows = cols = None
        if self.pos < len(self.text) and self.text[self.pos] == ";":
            self.pos += 1
            self.ws()
            while self.pos < len(self.text):
                at = self.pos
                axis = self.match(r"rows|cols", "'rows=' or 'cols='")
                self.match(r"=", "'='")
                dim = self.match(r"[a-z]+", "a dim name")
                ways = int(self.match(r"\d+", "the number of ways"))
                if (rows if axis == "rows" else cols) is not None:
                    self.error(f"{axis} given only once", at)
                if axis == "rows":
                    rows = Spatial(dim, ways)
                else:
                    cols = Spatial(dim, ways)
                self.ws()
        if self.pos != len(self.text):
            self.error("'|' then another level, ';' then the spatial split, or the end")
        return Mapping(tuple(levels), rows, cols)

    def level(self) -> LevelMapping:
        name = self.match(r"[A-Za-z_][A-Za-z0-9_]*", "a level name")
        self.match(r"\[", "'[' starting the tile sizes")
        tiles = []
        self.ws()
        while True:
            at = self.pos
            dim = self.match(r"[a-z]+", "a dim name then its tile size (m64)")
            size = self.match(r"\d+", f"the tile size of {dim}")
            if any(d == dim for d, _ in tiles):
                self.error(f"each dim once (duplicate {dim})", at)
            tiles.append((dim, int(size)))
            self.ws()
            if self.pos < len(self.text) and self.text[self.pos] == "]":
                self.pos += 1
                break
        order, db, bypass, pack = (), set(), set(), set()
        while True:
            self.ws()
            if self.pos >= len(self.text) or self.text[self.pos] in "|;":
                break
            if self.text.startswith("db:", self.pos):
                self.pos += 3
                db |= set(self.names())
            elif self.text.startswith("bypass:", self.pos):
                self.pos += 7
                bypass |= set(self.names())
            elif self.text.startswith("pack:", self.pos):
                self.pos += 5
                pack |= set(self.names())
            elif not order:
                word = self.match(r"[a-z]+(,[a-z]+)*", "a loop order, 'db:', 'bypass:' or 'pack:'")
                order = _split_order(word, [d for d, _ in tiles])
            else:
                self.error("'db:', 'bypass:', 'pack:', '|' or ';'")
        return LevelMapping(name, tuple(tiles), order, frozenset(bypass), frozenset(db),
                            frozenset(pack))

    def names(self) -> list[str]:
        word = self.match(r"[A-Za-z][A-Za-z0-9_]*(,[A-Za-z][A-Za-z0-9_]*)*", "tensor names A,B")
        return word.split(",")
