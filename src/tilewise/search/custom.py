"""Custom objectives: any function of a mapping's metrics, searched exactly when it is monotone.

A :class:`Custom` wraps a user function ``fn(m: Metrics) -> number`` of the five minimized
metrics of a mapping (:class:`Metrics`: latency s, off-chip traffic bytes, energy J, on-chip
space bytes, ``1/𝔽``). The search gives ``fn`` numpy arrays (one entry per candidate or node);
a function that only takes scalars is applied entry by entry.

*Monotone* (``monotone=True``, stated by the user): ``fn`` never decreases when any metric
grows. Then ``fn`` of the per-node lower bounds of the five metrics (each bound valid on its
own: :mod:`.bound`) is a lower bound of ``fn`` over every mapping below the node, so the
branch and bound is exact for ``fn`` itself, with no Pareto front to build: the answer is the
exact optimum (it lies on the Pareto front of the five metrics, and so does what the bound
finds). *Not monotone*: no bound holds; the search takes the exact top ``pool`` of the
``closest`` built-in objective, ranks them by ``fn`` and says the answer is not proven optimal.

:func:`expression` builds ``fn`` from a text such as ``"latency * energy ** 0.5"`` (names
``latency``, ``traffic``, ``energy``, ``space``, ``ratio``; numbers; ``+ - * / **``; ``min``,
``max``, ``log``, ``sqrt``, ``exp``), parsed with :mod:`ast` and evaluated without ``eval``.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from ..errors import TilewiseError


class Metrics(NamedTuple):
    """A mapping's minimized metrics (arrays or floats): seconds, bytes, joules (NaN: the arch
    gives no energy numbers), bytes, ``1/𝔽``."""

    latency: np.ndarray
    traffic: np.ndarray
    energy: np.ndarray
    space: np.ndarray
    ratio: np.ndarray


BASE = ("latency", "traffic", "energy", "space", "ratio")


@dataclass(frozen=True, eq=False)
class Custom:
    """A user objective (module doc): ``fn`` of :class:`Metrics`, minimized; ``monotone`` as
    stated by the user; ``closest`` the built-in objective ranked first when not monotone,
    ``pool`` how many of its best are re-ranked; ``name`` for tables and JSON."""

    fn: Callable
    monotone: bool = False
    name: str = "custom"
    closest: str = "latency"
    pool: int = 200

    def __str__(self) -> str:
        return self.name

    def __call__(self, latency, traffic, energy, space, ratio) -> np.ndarray:
        """``fn`` over arrays of metrics, as a float array of their shape."""
        m = Metrics(*(np.asarray(x, float) for x in (latency, traffic, energy, space, ratio)))
        shape = np.broadcast(*m).shape
        try:
            out = np.asarray(self.fn(m), float)
        except (TypeError, ValueError):
            out = None
        if out is None or out.shape != shape:  # a scalar function: entry by entry
            flat = [np.broadcast_to(x, shape).ravel() for x in m]
            out = np.array([float(self.fn(Metrics(*row))) for row in zip(*flat)]).reshape(shape)
        return out


def as_custom(objective, monotone: bool | None = None) -> Custom:
    """A :class:`Custom` from a Custom, a callable or an expression text; ``monotone`` (when
    given) overrides what it states."""
    if isinstance(objective, Custom):
        c = objective
    elif isinstance(objective, str):
        c = Custom(expression(objective), name=objective)
    elif callable(objective):
        c = Custom(objective, name=getattr(objective, "__name__", "custom"))
    else:
        raise TilewiseError(f"objective {objective!r} is not a built-in name, a callable or an "
                            "expression")
    if monotone is not None:
        c = Custom(c.fn, bool(monotone), c.name, c.closest, c.pool)
    return c


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow}
_FUNCS = {"min": np.minimum, "max": np.maximum, "log": np.log, "sqrt": np.sqrt, "exp": np.exp}


def expression(text: str) -> Callable:
    """``fn(m: Metrics)`` computing ``text`` (module doc); TilewiseError naming the first
    thing in it that is not allowed."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise TilewiseError(f"objective expression {text!r} does not parse: {e.msg}") from None
    _check(tree.body, text)
    return lambda m: _eval(tree.body, m)


def _check(node, text: str) -> None:
    ok = (isinstance(node, ast.BinOp) and type(node.op) in _BINARY
          or isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd))
          or isinstance(node, ast.Constant) and isinstance(node.value, (int, float))
          and not isinstance(node.value, bool)
          or isinstance(node, ast.Name) and node.id in BASE
          or isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id in _FUNCS and not node.keywords and node.args)
    if not ok:
        bad = ast.get_source_segment(text.strip(), node) or type(node).__name__
        raise TilewiseError(f"objective expression {text!r}: {bad!r} is not allowed; use the "
                            f"names {', '.join(BASE)}, numbers, + - * / ** and "
                            f"{', '.join(_FUNCS)}(...)")
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.operator, ast.unaryop, ast.expr_context)) and child is not getattr(node, "func", None):
            _check(child, text)


def _eval(node, m: Metrics):
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_eval(node.left, m), _eval(node.right, m))
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, m)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return getattr(m, node.id)
    args = [_eval(a, m) for a in node.args]
    f = _FUNCS[node.func.id]
    if f in (np.minimum, np.maximum):
        out = args[0]
        for a in args[1:]:
            out = f(out, a)
        return out
    return f(*args)
