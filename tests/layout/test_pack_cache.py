"""The remembered plans of repeated ``pack``/``unpack`` calls (``tilewise.layout.hot``): a plan
is reused only for the call it was verified for. Sequences of calls that share attribute
objects, shapes and dtypes (so the previous-call test, ``BY_ID`` and ``BY_VALUE`` all hit)
but vary one of shape, dtype, source strides, destination, padding and attributes equal the
numpy reference call by call; and the sequence check itself fails when a part of the cache
key is cut (so it would catch a plan reused across that part)."""

from __future__ import annotations

from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilewise.layout.pack as pack_mod
from tilewise import PackError, pack, pack_reference, unpack, unpack_reference
from tilewise.layout import hot

# Shared attribute objects: the same tuples every call, as a loop passes them.
POS, TILES, PERM_T = (0, 1), (8, 4), (1, 0)
NO_PERM = ()
SHAPES = [(32, 16), (32, 32), (16, 32), (30, 14)]  # (30, 14) needs padding
DTYPES = [np.dtype(t) for t in (np.float32, np.int32, np.int16, ml_dtypes.bfloat16, np.int8)]
LAYOUTS = ("c", "strided", "fortran")
PADS = (None, 0, 7, -0.0)


class Call(NamedTuple):
    """One call of a sequence: ``op`` on a source of ``shape`` and ``dtype`` laid out as
    ``layout`` (``LAYOUTS``), attributes as the shared tuples or (``listed``) fresh lists,
    ``perm`` or not, ``padding`` (packs of shapes that need it), into ``out=`` or not."""

    op: str
    shape: tuple[int, ...]
    dtype: np.dtype
    layout: str
    listed: bool
    perm: bool
    padding: object
    out: bool


def _source(shape, dtype, layout: str, seed: int) -> np.ndarray:
    """Random values of ``shape`` and ``dtype``: C-ordered, a strided view, or Fortran."""
    rng = np.random.default_rng(seed)
    wide = (rng.standard_normal((shape[0], 2 * shape[1])) * 50).clip(-100, 100).astype(dtype)
    if layout == "strided":
        return wide[:, ::2]
    x = np.ascontiguousarray(wide[:, : shape[1]])
    return np.asfortranarray(x) if layout == "fortran" else x


def _attrs(call: Call):
    pos, tiles = (list(POS), list(TILES)) if call.listed else (POS, TILES)
    perm = PERM_T if call.perm else NO_PERM
    return pos, tiles, (list(perm) if call.listed else perm)


def _needs_padding(shape) -> bool:
    return any(s % t for s, t in zip(shape, TILES))


def _run_one(call: Call, seed: int) -> str | None:
    """Run ``call``; a description of how it differs from the reference, or None."""
    x = _source(call.shape, call.dtype, call.layout, seed)
    pos, tiles, perm = _attrs(call)
    pad = call.padding if _needs_padding(call.shape) else None
    if pad is None and _needs_padding(call.shape):
        pad = 0
    ref = pack_reference(x, pos, tiles, perm, padding_value=pad)
    if call.op == "pack":
        out = np.full(ref.shape, 1, x.dtype) if call.out else None
        got = pack(x, pos, tiles, perm, padding_value=pad, out=out)
        want = ref
    else:
        src = ref if call.layout == "c" else np.asfortranarray(ref)
        out = np.full(x.shape, 1, x.dtype) if call.out else None
        got = unpack(src, pos, tiles, perm, shape=x.shape, out=out)
        want = unpack_reference(ref, pos, tiles, perm, shape=x.shape)
    if out is not None and got is not out:
        return f"{call}: out= not returned"
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{call}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    if got.tobytes() != want.tobytes():
        return f"{call}: other bytes"
    return None


def check_sequence(calls, repeat: int = 2) -> list[str]:
    """Run every call of ``calls`` ``repeat`` times in turn (so each later call finds the
    plans of the others remembered); the mismatches against the reference."""
    bad = []
    for r in range(repeat):
        for i, call in enumerate(calls):
            why = _run_one(call, seed=i + 100 * r)
            if why is not None:
                bad.append(why)
    return bad


_calls = st.builds(Call, op=st.sampled_from(["pack", "unpack"]), shape=st.sampled_from(SHAPES),
                   dtype=st.sampled_from(DTYPES), layout=st.sampled_from(LAYOUTS),
                   listed=st.booleans(), perm=st.booleans(), padding=st.sampled_from(PADS),
                   out=st.booleans())


@settings(max_examples=60, deadline=None)
@given(st.lists(_calls, min_size=2, max_size=8))
def test_repeated_calls_with_varying_arguments_equal_the_reference(calls):
    assert check_sequence(calls) == []


def _varying(field: str, values) -> list[Call]:
    base = Call("pack", (32, 32), np.dtype(np.float32), "c", False, False, None, False)
    return [base._replace(**{field: v}) for v in values]


@pytest.mark.parametrize("op", ["pack", "unpack"])
@pytest.mark.parametrize("field, values", [
    ("shape", [(32, 32), (32, 16), (16, 32)]),
    ("dtype", [np.dtype(t) for t in (np.float32, np.int32, np.int16, np.int8)]),
    ("layout", LAYOUTS),
    ("out", [False, True]),
    ("perm", [False, True]),
    ("listed", [False, True]),
])
def test_a_plan_is_not_reused_across(op, field, values):
    calls = [c._replace(op=op) for c in _varying(field, values)]
    assert check_sequence(calls, repeat=3) == []


def test_a_plan_is_not_reused_across_paddings():
    calls = [Call("pack", (30, 14), np.dtype(np.float32), "c", False, False, p, o)
             for p in (0, 7, -0.0) for o in (False, True)]
    assert check_sequence(calls, repeat=3) == []


def test_bad_destinations_are_rejected_after_the_plan_is_hot():
    x = _source((32, 32), np.float32, "c", 0)
    ref = pack_reference(x, POS, TILES)
    for _ in range(3):
        pack(x, POS, TILES, out=np.empty(ref.shape, np.float32))
        unpack(ref, POS, TILES, shape=x.shape, out=np.empty(x.shape, np.float32))
    with pytest.raises(PackError, match="packed domain"):
        pack(x, POS, TILES, out=np.empty(ref.shape, np.int32))
    with pytest.raises(PackError, match="packed domain"):
        pack(x, POS, TILES, out=np.empty(ref.shape[:-1] + (2,), np.float32))
    with pytest.raises(PackError, match="strided"):
        pack(x, POS, TILES, out=np.empty(ref.shape[:-1] + (8,), np.float32)[..., ::2])
    with pytest.raises(PackError, match="unpacked domain"):
        unpack(ref, POS, TILES, shape=x.shape, out=np.empty(x.shape, np.int32))
    with pytest.raises(PackError, match="strided"):
        unpack(ref, POS, TILES, shape=x.shape, out=np.empty((32, 64), np.float32)[:, ::2])


# --- the check has teeth: cut a part out of the cache keys, and it fails ------------------

class _CutDict(dict):
    """A plan dict that drops position ``at`` of every key: plans remembered under a key
    that lacks that part."""

    def __init__(self, at: int):
        super().__init__()
        self.at = at

    def _cut(self, key):
        return key[:self.at] + key[self.at + 1:]

    def get(self, key, default=None):
        return super().get(self._cut(key), default)

    def __setitem__(self, key, value):
        super().__setitem__(self._cut(key), value)


# Positions in ``BY_ID``'s key (op, id(pos), id(tiles), id(perm), shape, dtype, extra) and in
# ``BY_VALUE``'s (op, shape, dtype, pos, tiles, perm, extra).
_CUTS = {"dtype": (5, 2), "perm": (3, 5), "padding": (6, 6)}
# Sequences that reuse a plan wrongly when that part is cut; dtypes of one size, so the
# wrongly reused kernel stays inside the arrays.
_TEETH = {
    "dtype": _varying("dtype", [np.dtype(np.float32), np.dtype(np.int32)]),
    "perm": _varying("perm", [False, True]),
    "padding": [Call("pack", (30, 14), np.dtype(np.float32), "c", False, False, p, False)
                for p in (0, 7)],
}


def _forget_last() -> None:
    hot.LAST_PACK[0] = hot.LAST_UNPACK[0] = None


@pytest.mark.parametrize("part", sorted(_CUTS))
def test_the_sequence_check_fails_when_a_key_part_is_cut(part, monkeypatch):
    by_id_at, by_value_at = _CUTS[part]
    by_id, by_value = _CutDict(by_id_at), _CutDict(by_value_at)
    monkeypatch.setattr(hot, "BY_ID", by_id)
    monkeypatch.setattr(pack_mod, "BY_ID", by_id)
    monkeypatch.setattr(hot, "BY_VALUE", by_value)
    _forget_last()
    try:
        assert check_sequence(_TEETH[part], repeat=3) != []
    finally:  # the previous-call entries may hold a plan found by a cut key
        monkeypatch.undo()
        _forget_last()
    assert check_sequence(_TEETH[part], repeat=3) == []  # the uncut cache passes it


def test_the_previous_call_without_out_allocates_a_new_result_of_the_planned_shape():
    x = _source((30, 14), np.float32, "c", 3)
    p = pack_reference(x, POS, TILES, padding_value=0)
    small = np.empty(x.shape, np.float32)
    for _ in range(3):  # no shape=: out= decides the unpacked shape, (30, 14)
        assert unpack(p, POS, TILES, out=small).tobytes() == x.tobytes()
    whole = unpack(p, POS, TILES)  # neither: whole tiles, (32, 16)
    assert whole.tobytes() == unpack_reference(p, POS, TILES).tobytes()
    shape = x.shape
    got = [unpack(p, POS, TILES, shape=shape) for _ in range(3)]
    got += [pack(x, POS, TILES, padding_value=0) for _ in range(3)]
    assert len({id(a) for a in got}) == len(got)  # a new array every call
    assert all(a.tobytes() == x.tobytes() for a in got[:3])
    assert all(a.tobytes() == p.tobytes() for a in got[3:])
    assert hot.LAST_PACK[0] is not None and hot.LAST_PACK[0][hot.L_PLAN].shape == p.shape


@pytest.mark.parametrize("bad", [[True, 8], [1.0, 8], [np.True_, 8]])
def test_a_plan_found_by_value_still_rejects_bool_and_float_attributes(bad):
    # [True, 8] == [1, 8]: the value key must not let a bool reach the plan for [1, 8]
    # (operator.index(True) is 1).
    x = np.ones((8, 16), np.float32)
    for _ in range(3):
        pack(x, [0, 1], [1, 8])
        unpack(pack_reference(x, (0, 1), (1, 8)), [0, 1], [1, 8], shape=(8, 16))
    with pytest.raises(PackError, match="inner_tiles must be a list of integers"):
        pack(x, [0, 1], bad)
    with pytest.raises(PackError, match="inner_tiles must be a list of integers"):
        unpack(pack_reference(x, (0, 1), (1, 8)), [0, 1], bad, shape=(8, 16))


def test_numpy_integer_attributes_find_the_plan_by_value():
    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    ref = pack_reference(x, (0, 1), (4, 8))
    for _ in range(3):
        got = pack(x, np.array([0, 1]), [np.int64(4), np.int32(8)])
        assert got.tobytes() == ref.tobytes()
    assert hot.value_key("pack", x, np.array([0, 1]), [np.int64(4), 8], (), None) == \
        hot.value_key("pack", x, [0, 1], (4, 8), [], None)
