"""Affine index expressions: how a tensor axis is indexed by loop dims.

An axis index is ``c1*d1 + c2*d2 + ... + const`` with positive integer coefficients, e.g. a
convolution input row ``p*2 + r - 1`` (stride 2, padding 1). A tile of the loop nest gives each
dim a half-open range; the tensor tile is the *bounding box* of the indices it touches, so along
one axis its extent is ``sum(c * (t - 1)) + 1`` for tile sizes ``t`` (the halo rule)::

    >>> e = Affine.parse("p*2 + r - 1")
    >>> e.extent({"p": 4, "r": 3})            # (4-1)*2 + (3-1)*1 + 1 elements
    9
    >>> e.bounds({"p": (0, 4), "r": (0, 3)})  # inclusive [lo, hi] before clipping to the tensor
    (-1, 7)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from ..errors import ParseError

_TOKEN = re.compile(r"\s*(?:(\d+)|([a-z]+)|([*+-]))")


@dataclass(frozen=True)
class Affine:
    """``sum(coeff * dim) + const``; ``terms`` is ``((dim, coeff), ...)`` with coeff >= 1."""

    terms: tuple[tuple[str, int], ...]
    const: int = 0

    @classmethod
    def of(cls, value: "Affine | str") -> "Affine":
        """An Affine from itself or its text (``"m"``, ``"p*2 + r - 1"``)."""
        return value if isinstance(value, Affine) else cls.parse(value)

    @classmethod
    def parse(cls, text: str) -> "Affine":
        """Parse ``term (+|- term)*`` where a term is ``dim``, ``int*dim``, ``dim*int`` or ``int``.

        Dims are lowercase letter names; only constants may be subtracted. ParseError points at
        the offending character.
        """
        tokens, pos = [], 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise ParseError("index expression", text, pos + len(text[pos:]) - len(text[pos:].lstrip()),
                                 "a dim name (lowercase letters), an integer, '*', '+' or '-'")
            kind = "int" if m.group(1) else "dim" if m.group(2) else "op"
            tokens.append((kind, m.group(m.lastindex), m.start(m.lastindex)))
            pos = m.end()
        coeffs: dict[str, int] = {}
        const, i, sign = 0, 0, 1
        while True:
            if i >= len(tokens):
                raise ParseError("index expression", text, len(text), "a dim or an integer")
            kind, val, at = tokens[i]
            if kind == "op":
                raise ParseError("index expression", text, at, "a dim or an integer")
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if nxt and nxt[1] == "*":
                if i + 2 >= len(tokens) or tokens[i + 2][0] == "op":
                    raise ParseError("index expression", text,
                                     tokens[i + 2][2] if i + 2 < len(tokens) else len(text),
                                     "a dim or an integer after '*'")
                k2, v2, at2 = tokens[i + 2]
                if (kind == "int") == (k2 == "int"):
                    raise ParseError("index expression", text, at2,
                                     "an integer times a dim (a product of two dims is not affine)"
                                     if kind == "dim" else "a dim after 'integer *'")
                dim, coeff = (val, int(v2)) if kind == "dim" else (v2, int(val))
                i += 3
                term_at = at
            else:
                dim, coeff, term_at = (val, 1, at) if kind == "dim" else (None, int(val), at)
                i += 1
            if dim is None:
                const += sign * coeff
            else:
                if sign < 0:
                    raise ParseError("index expression", text, term_at,
                                     "a constant after '-' (dims must have positive coefficients)")
                if coeff <= 0:
                    raise ParseError("index expression", text, term_at,
                                     "a positive coefficient")
                coeffs[dim] = coeffs.get(dim, 0) + coeff
            if i >= len(tokens):
                break
            kind, val, at = tokens[i]
            if kind != "op" or val == "*":
                raise ParseError("index expression", text, at, "'+' or '-'")
            sign = 1 if val == "+" else -1
            i += 1
        if not coeffs:
            raise ParseError("index expression", text, 0, "at least one dim")
        return cls(tuple(coeffs.items()), const)

    @cached_property
    def dims(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.terms)

    @property
    def is_plain(self) -> bool:
        """True for a bare dim (``m``): coefficient 1, no offset."""
        return len(self.terms) == 1 and self.terms[0][1] == 1 and self.const == 0

    def extent(self, tile: "dict[str, int]") -> int:
        """Elements spanned along this axis by a tile of ``tile[d]`` elements per dim (halo rule)."""
        return sum(c * (tile[d] - 1) for d, c in self.terms) + 1

    def bounds(self, ranges: "dict[str, tuple[int, int]]") -> tuple[int, int]:
        """Inclusive ``(lo, hi)`` index touched by half-open dim ranges ``{d: (start, stop)}``."""
        lo = sum(c * ranges[d][0] for d, c in self.terms) + self.const
        hi = sum(c * (ranges[d][1] - 1) for d, c in self.terms) + self.const
        return lo, hi

    def __str__(self) -> str:
        parts = [d if c == 1 else f"{d}*{c}" for d, c in self.terms]
        text = " + ".join(parts)
        if self.const:
            text += f" {'+' if self.const > 0 else '-'} {abs(self.const)}"
        return text
