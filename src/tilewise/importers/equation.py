"""ONNX ``Einsum`` equations -> a tilewise einsum spec over lowercase letters and dim sizes.

ONNX equations use upper- and lowercase letters, ``...`` for leading broadcast dims and an
optional ``->``; without it the output is every letter used once, in alphabetical order, after
the ellipsis dims. tilewise einsum specs use distinct lowercase letters, so letters are renamed
in order of first appearance (``"BiJ,BJk->Bik"`` becomes ``"abc,acd->abd"``)::

    >>> contraction("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)])
    ('abc,acd->abd', {'a': 2, 'b': 3, 'c': 4, 'd': 5})
    >>> contraction("...ij,jk", [(8, 3, 4), (4, 5)])
    ('abc,cd->abd', {'a': 8, 'b': 3, 'c': 4, 'd': 5})
"""

from __future__ import annotations

import string

from .graph import Skip


def contraction(equation: str, shapes: list[tuple[int, ...]]) -> tuple[str, dict[str, int]]:
    """``(spec, sizes)`` for :func:`tilewise.einsum`; :class:`Skip` for what it cannot express
    (one operand, a repeated letter (a diagonal), a broadcast size 1, a scalar output)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise Skip(f"Einsum {equation!r} has {len(terms)} operands but {len(shapes)} inputs")
    if len(terms) < 2:
        raise Skip(f"Einsum {equation!r} has one operand: a transpose or reduction, no contraction")
    ell = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t),
              default=0)
    fresh = [c for c in string.ascii_letters if c not in eq][:ell]
    expanded = [_expand(t, len(s), fresh) for t, s in zip(terms, shapes)]
    if not arrow:
        once = [c for c in dict.fromkeys("".join(expanded))
                if "".join(expanded).count(c) == 1 and c not in fresh]
        out = "".join(fresh) + "".join(sorted(once))
    else:
        out = _expand(rhs, len(fresh) + len(rhs.replace("...", "")), fresh)
    sizes: dict[str, int] = {}
    for term, shape in zip(expanded, shapes):
        if len(term) != len(shape):
            raise Skip(f"Einsum {equation!r}: operand {term!r} does not match shape {shape}")
        if len(set(term)) != len(term):
            raise Skip(f"Einsum {equation!r}: a repeated letter in {term!r} (a diagonal)")
        for c, n in zip(term, shape):
            if sizes.setdefault(c, n) != n:
                raise Skip(f"Einsum {equation!r}: letter {c!r} has sizes {sizes[c]} and {n} "
                           "(broadcasting is not tiled)")
    if not out:
        raise Skip(f"Einsum {equation!r} reduces to a scalar")
    letters = list(dict.fromkeys("".join(expanded)))
    if len(letters) > 26:
        raise Skip(f"Einsum {equation!r} has more than 26 dims")
    rename = {c: string.ascii_lowercase[i] for i, c in enumerate(letters)}
    spec = ",".join("".join(rename[c] for c in t) for t in expanded) + "->" + "".join(
        rename[c] for c in out)
    return spec, {rename[c]: sizes[c] for c in letters}


def _expand(term: str, rank: int, fresh: list[str]) -> str:
    """``term`` with ``...`` replaced by the last ``rank - len(letters)`` fresh letters."""
    if "..." not in term:
        return term
    n = rank - len(term.replace("...", ""))
    return term.replace("...", "".join(fresh[len(fresh) - n:]) if n else "")
