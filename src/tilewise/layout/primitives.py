"""LLVM primitives of the pack/unpack kernels (numba intrinsics): pointers and loads, plain
and non-temporal stores, vector moves, whole lines joined from runs and shifted to the
destination's lines, register transposes (8x8 words, squares, lane zips, 16 channel planes)
and the store fence. :mod:`.kernels` builds its walks from them; every offset is in units of
the pointer's element type, every line is 64 bytes."""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_LINE = 64


@intrinsic
def _data(typingctx, arr):
    """The data pointer of an array (no reference counting in the loops that use it)."""

    def codegen(context, builder, signature, args):
        return context.make_array(signature.args[0])(context, builder, args[0]).data

    return types.CPointer(arr.dtype)(arr), codegen


def _make_cast(dtype):
    def _cast(typingctx, arr):
        """The data pointer of a byte array, as a pointer to ``dtype`` units."""

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            return builder.bitcast(data, context.get_value_type(types.CPointer(dtype)))

        return types.CPointer(dtype)(arr), codegen

    return intrinsic(_cast)


_ptr8, _ptr4, _ptr2, _ptr1 = (_make_cast(t) for t in (types.uint64, types.uint32,
                                                      types.uint16, types.uint8))


@intrinsic
def _ptr_of(typingctx, arr):
    """The data pointer of an array of units (``uint8`` .. ``uint64``)."""

    def codegen(context, builder, signature, args):
        return context.make_array(signature.args[0])(context, builder, args[0]).data

    return types.CPointer(arr.dtype)(arr), codegen


@intrinsic
def _advance(typingctx, ptr, n):
    """``ptr + n`` (units)."""

    def codegen(context, builder, signature, args):
        return builder.gep(args[0], [args[1]])

    return ptr(ptr, types.intp), codegen


@intrinsic
def _address(typingctx, ptr):
    """A pointer as an integer (bytes)."""

    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], context.get_value_type(types.intp))

    return types.intp(ptr), codegen


@intrinsic
def _load(typingctx, ptr, idx):
    def codegen(context, builder, signature, args):
        return builder.load(builder.gep(args[0], [args[1]]))

    return ptr.dtype(ptr, types.intp), codegen


def _nontemporal(builder, store):
    store.set_metadata("nontemporal",
                       builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))


def _make_store(streaming: bool):
    def _store(typingctx, ptr, idx, val):
        def codegen(context, builder, signature, args):
            st = builder.store(args[2], builder.gep(args[0], [args[1]]))
            if streaming:
                _nontemporal(builder, st)
            return context.get_dummy_value()

        return types.void(ptr, types.intp, ptr.dtype), codegen

    return intrinsic(_store)


# ``ptr[idx] = val``; ``_stream`` is a non-temporal store (``movnti``), which writes around
# the cache and saves the read-for-ownership of each destination line.
_put = _make_store(False)
_stream = _make_store(True)


def _make_move(nbytes: int):
    def _move(typingctx, srcp, s, dstp, d):
        """``dst[d:] = src[s:]`` for ``nbytes`` bytes: one unaligned vector load and store."""

        def codegen(context, builder, signature, args):
            sp, s, dp, d = args
            elty = context.get_value_type(signature.args[0].dtype)
            if 8 * nbytes < elty.width:  # narrower than a unit: never reached
                return context.get_dummy_value()
            vty = ir.VectorType(elty, 8 * nbytes // elty.width).as_pointer()
            align = elty.width // 8
            v = builder.load(builder.bitcast(builder.gep(sp, [s]), vty), align=align)
            builder.store(v, builder.bitcast(builder.gep(dp, [d]), vty), align=align)
            return context.get_dummy_value()

        return types.void(srcp, types.intp, dstp, types.intp), codegen

    return intrinsic(_move)


_move32, _move16, _move8, _move4, _move2 = (_make_move(n) for n in (32, 16, 8, 4, 2))


@intrinsic
def _unit_bytes(typingctx, ptr):
    """The bytes of one unit a pointer addresses (a compile-time constant)."""
    nbytes = ptr.dtype.bitwidth // 8

    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, nbytes)

    return types.intp(ptr), codegen


@njit(nogil=True, inline="always")
def _to_line(ptr, addr, at):
    """Units of ``ptr``'s type from unit ``at`` of a buffer at byte address ``addr`` to the
    next 64-byte line boundary (0 on one)."""
    lineu = _LINE // _unit_bytes(ptr)
    return (lineu - (addr // _unit_bytes(ptr) + at) % lineu) % lineu


@intrinsic
def _stream_line(typingctx, srcp, s, dstp, d):
    """``dst[d:d + 64 bytes] = src[s:...]``: one 64-byte vector load and an aligned
    non-temporal vector store; ``dst + d`` must be 64-byte aligned."""

    def codegen(context, builder, signature, args):
        sp, s, dp, d = args
        elty = context.get_value_type(signature.args[0].dtype)
        vty = ir.VectorType(elty, 8 * _LINE // elty.width)
        v = builder.load(builder.bitcast(builder.gep(sp, [s]), vty.as_pointer()),
                         align=elty.width // 8)
        st = builder.store(v, builder.bitcast(builder.gep(dp, [d]), vty.as_pointer()),
                           align=_LINE)
        _nontemporal(builder, st)
        return context.get_dummy_value()

    return types.void(srcp, types.intp, dstp, types.intp), codegen


def _concat(builder, parts):
    """The vectors ``parts`` (a power of two of them, of one type) joined in order."""
    while len(parts) > 1:
        n = 2 * parts[0].type.count
        parts = [builder.shuffle_vector(a, b, _mask(list(range(n))))
                 for a, b in zip(parts[::2], parts[1::2])]
    return parts[0]


def _constant_cases(builder, value, cases, body, default):
    """Code specialised to each constant of a runtime ``value``: a switch to one block per
    ``v`` in ``cases`` (emitted by ``body(v)``, ``v`` a Python int, so its shuffles are
    constant), ``default()`` for any other value; both join after."""
    done = builder.append_basic_block("cases_done")
    other = builder.append_basic_block("cases_other")
    switch = builder.switch(value, other)
    for v in cases:
        block = builder.append_basic_block(f"case{v}")
        switch.add_case(ir.Constant(value.type, v), block)
        builder.position_at_end(block)
        body(v)
        builder.branch(done)
    builder.position_at_end(other)
    default()
    builder.branch(done)
    builder.position_at_end(done)


def _store_shifted(builder, h, shifts, line, rest, ptr):
    """A non-temporal aligned store at ``ptr``: ``line`` when ``h == 0``, else units
    ``[h, h + len)`` of ``line`` followed by ``rest()`` (built in the case that needs it),
    ``h`` below ``shifts`` selecting a constant shuffle."""
    lineu = line.type.count

    def shifted(v):
        vec = builder.shuffle_vector(line, rest(), _mask(list(range(v, v + lineu))))
        _nontemporal(builder, builder.store(vec, ptr, align=_LINE))

    _constant_cases(builder, h, range(1, shifts), shifted,
                    lambda: _nontemporal(builder, builder.store(line, ptr, align=_LINE)))


def _make_line(pieces: int):
    def _line(typingctx, srcp, s, ss, dstp, d, h):
        """One aligned non-temporal line at ``dst + d`` (64-byte aligned) from runs of
        ``run = line / pieces`` units at ``src[s]``, ``src[s + ss]``, ...: with the runs
        joined in order as one row, the line is the row's units ``[h, h + line)``. The runs
        are loaded as vectors and joined in registers; ``h`` (0 to 7) selects a constant
        shuffle (a switch, the same case for a whole panel); with ``h == 0`` only the first
        ``pieces`` runs are read."""

        def codegen(context, builder, signature, args):
            sp, s, ss, dp, d, h = args
            elty = context.get_value_type(signature.args[0].dtype)
            lineu = 8 * _LINE // elty.width
            run = lineu // pieces
            vty = ir.VectorType(elty, lineu)

            def joined(first):  # runs first .. first + pieces - 1, joined
                parts = []
                for k in range(first, first + pieces):
                    at = builder.add(s, builder.mul(ss, ir.Constant(ss.type, k)))
                    ptr = builder.bitcast(builder.gep(sp, [at]),
                                          ir.VectorType(elty, run).as_pointer())
                    parts.append(builder.load(ptr, align=elty.width // 8))
                return _concat(builder, parts)

            ptr = builder.bitcast(builder.gep(dp, [d]), vty.as_pointer())
            _store_shifted(builder, h, lineu, joined(0), lambda: joined(pieces), ptr)
            return context.get_dummy_value()

        return types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp), codegen

    return intrinsic(_line)


_line1, _line2, _line4 = _make_line(1), _make_line(2), _make_line(4)


def _join_codegen(g: int):
    """The codegen of ``_join2`` / ``_join4``: a line from ``g`` runs (``g + 1`` shifted)."""

    def codegen(context, builder, signature, args):
        sp, addrs, (dp, d, sh) = args[0], args[1:g + 2], args[g + 2:]
        elty = context.get_value_type(signature.args[0].dtype)
        lineu = 8 * _LINE // elty.width
        rty = ir.VectorType(elty, lineu // g)

        def load(at):
            ptr = builder.bitcast(builder.gep(sp, [at]), rty.as_pointer())
            return builder.load(ptr, align=elty.width // 8)

        ptr = builder.bitcast(builder.gep(dp, [d]), ir.VectorType(elty, lineu).as_pointer())
        line = _concat(builder, [load(at) for at in addrs[:g]])
        _store_shifted(builder, sh, lineu // g, line, lambda: _concat(
            builder, [load(addrs[g])] + [ir.Constant(rty, None)] * (g - 1)), ptr)
        return context.get_dummy_value()

    return codegen


@intrinsic
def _join2(typingctx, srcp, a0, a1, a2, dstp, d, sh):
    """One aligned non-temporal line at ``dst + d`` (64-byte aligned) from half-line runs at
    ``src[a0]``, ``src[a1]`` and, shifted, ``src[a2]`` (any addresses): with the runs joined
    in order, the line is their units ``[sh, sh + line)``; ``sh`` (below a run) selects a
    constant shuffle; with ``sh == 0`` the last run is not read."""
    return types.void(srcp, types.intp, types.intp, types.intp, dstp, types.intp,
                      types.intp), _join_codegen(2)


@intrinsic
def _join4(typingctx, srcp, a0, a1, a2, a3, a4, dstp, d, sh):
    """``_join2`` for quarter-line runs: four runs a line, five when shifted."""
    return types.void(srcp, types.intp, types.intp, types.intp, types.intp, types.intp, dstp,
                      types.intp, types.intp), _join_codegen(4)


def _mask(values):
    i32 = ir.IntType(32)
    return ir.Constant(ir.VectorType(i32, len(values)), [ir.Constant(i32, v) for v in values])


# Three rounds of 2-input shuffles transpose 8 vectors of 8 (unpack lo/hi, then pairs, then
# halves): out[i][k] = in[k][i].
_ROUNDS = [([0, 8, 2, 10, 4, 12, 6, 14], [1, 9, 3, 11, 5, 13, 7, 15], 1),
           ([0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15], 2),
           ([0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15], 4)]


def _transposed8(builder, sp, s, ss, vty):
    """The 8 vectors ``out[i][k] = src[s + i + k*ss]`` (i, k < 8): 8 vector loads and 24
    shuffles."""
    rows = []
    for k in range(8):
        ptr = builder.gep(sp, [builder.add(s, builder.mul(ss, ir.Constant(ss.type, k)))])
        rows.append(builder.load(builder.bitcast(ptr, vty.as_pointer()),
                                 align=vty.element.width // 8))
    return _rounds8(builder, rows)


def _rounds8(builder, rows):
    """``_ROUNDS`` on 8 vectors of 8: ``out[i][k] = rows[k][i]`` (24 shuffles)."""
    for lo, hi, step in _ROUNDS:
        out = [None] * 8
        for base in range(0, 8, 2 * step):
            for j in range(base, base + step):
                out[j] = builder.shuffle_vector(rows[j], rows[j + step], _mask(lo))
                out[j + step] = builder.shuffle_vector(rows[j], rows[j + step], _mask(hi))
        rows = out
    return rows


def _store_rows8(builder, dp, d, ds, blocks, vty, streaming):
    """Row ``i`` of each transposed block in ``blocks`` (``_transposed8``'s vectors) at
    ``dst + d + i*ds``, block ``k`` at ``+ 8k``: each row gets its blocks' lines one after the
    other; ``streaming``: aligned non-temporal stores."""
    for i in range(8):
        row = builder.add(d, builder.mul(ds, ir.Constant(ds.type, i)))
        for k, rows in enumerate(blocks):
            ptr = builder.gep(dp, [builder.add(row, ir.Constant(ds.type, 8 * k))])
            st = builder.store(rows[i], builder.bitcast(ptr, vty.as_pointer()),
                               align=_LINE if streaming else vty.element.width // 8)
            if streaming:
                _nontemporal(builder, st)


def _transpose8_codegen(context, builder, signature, args, streaming):
    """``dst[d + i*ds + k] = src[s + i + k*ss]`` for i, k < 8: 8 vector loads, 24 shuffles,
    8 vector stores; ``streaming``: the stores are aligned and non-temporal."""
    sp, s, ss, dp, d, ds = args
    vty = ir.VectorType(context.get_value_type(signature.args[0].dtype), 8)
    _store_rows8(builder, dp, d, ds, [_transposed8(builder, sp, s, ss, vty)], vty, streaming)
    return context.get_dummy_value()


@intrinsic
def _transpose8_pair(typingctx, srcp, s, ss, bs, dstp, d, ds):
    """Two ``_transpose8_stream`` of the blocks at ``src + s`` and ``src + s + bs`` into
    ``dst + d`` and ``dst + d + 8``, stored row by row: each destination row gets its two
    lines one after the other. Sixteen rows written a line each in turn ran at 0.64-0.71 of
    the fastest copy at 64 and 256 MiB, two lines each in turn at 0.87-0.88 (f32 T(16,2)
    unpack; Emerald Rapids VM: non-temporal stores of 16 interleaved rows, one line each,
    16-17 GB/s, two lines each 22-24 GB/s, as fast as in order)."""

    def codegen(context, builder, signature, args):
        sp, s, ss, bs, dp, d, ds = args
        vty = ir.VectorType(context.get_value_type(signature.args[0].dtype), 8)
        blocks = [_transposed8(builder, sp, s, ss, vty),
                  _transposed8(builder, sp, builder.add(s, bs), ss, vty)]
        _store_rows8(builder, dp, d, ds, blocks, vty, True)
        return context.get_dummy_value()

    sig = types.void(srcp, types.intp, types.intp, types.intp, dstp, types.intp, types.intp)
    return sig, codegen


def _swap_masks(k: int, step: int) -> tuple[list[int], list[int]]:
    """The two masks of a transpose round on a pair of ``k``-vectors (a, b): ``lo`` keeps
    a's even ``step``-blocks and takes b's even blocks in place of a's odd ones, ``hi`` the
    odd blocks likewise; after rounds of step 1, 2, 4, .. k/2 on the right pairs, k rows
    are transposed (``_ROUNDS`` is the k = 8 case)."""
    lo = [x if (x // step) % 2 == 0 else k + x - step for x in range(k)]
    hi = [x + step if (x // step) % 2 == 0 else k + x for x in range(k)]
    return lo, hi


# Side of the square a register transpose moves, by unit bytes: rows of 32 bytes (16 for
# single bytes, whose 32 x 32 would not fit the registers).
_SIDE = {8: 4, 4: 8, 2: 16, 1: 16}


@intrinsic
def _transpose_sq(typingctx, srcp, s, ss, dstp, d, ds):
    """``dst[d + i*ds + j] = src[s + i + j*ss]`` for i, j < k, ``k = _SIDE[unit]``: k
    vector loads, k log2 k shuffles (``_swap_masks``), k vector stores, plain."""
    k = _SIDE[srcp.dtype.bitwidth // 8]

    def codegen(context, builder, signature, args):
        sp, s, ss, dp, d, ds = args
        elty = context.get_value_type(signature.args[0].dtype)
        vty = ir.VectorType(elty, k).as_pointer()
        align = elty.width // 8
        rows = []
        for j in range(k):
            at = builder.add(s, builder.mul(ss, ir.Constant(ss.type, j)))
            rows.append(builder.load(builder.bitcast(builder.gep(sp, [at]), vty), align=align))
        step = 1
        while step < k:
            lo, hi = _swap_masks(k, step)
            out = [None] * k
            for base in range(0, k, 2 * step):
                for j in range(base, base + step):
                    a, b = rows[j], rows[j + step]
                    out[j] = builder.shuffle_vector(a, b, _mask(lo))
                    out[j + step] = builder.shuffle_vector(a, b, _mask(hi))
            rows = out
            step *= 2
        for i in range(k):
            at = builder.add(d, builder.mul(ds, ir.Constant(ds.type, i)))
            builder.store(rows[i], builder.bitcast(builder.gep(dp, [at]), vty), align=align)
        return context.get_dummy_value()

    return types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp), codegen


_LANE = 16  # bytes of a 128-bit lane: x86 unpack instructions zip within lanes
_LANES = 4  # lanes per row vector (64 bytes)


def _zip_masks(k: int, lanes: int) -> tuple[list[int], list[int]]:
    """Lane-local zips of two vectors of ``lanes`` lanes of ``k`` elements: ``lo`` takes
    a0 b0 a1 b1 .. of each lane's first half, ``hi`` of its second half (x86
    ``punpckl`` / ``punpckh``)."""
    n = k * lanes
    lo = [(x % 2) * n + lane * k + (x // 2) for lane in range(lanes) for x in range(k)]
    hi = [(x % 2) * n + lane * k + k // 2 + (x // 2) for lane in range(lanes) for x in range(k)]
    return lo, hi


def _zip_rounds(builder, rows, k):
    """``log2 k`` rounds of lane-local zips of row j with row j + k/2 (the perfect shuffle):
    every lane's k x k square transposed."""
    lo, hi = _zip_masks(k, _LANES)
    for _ in range(k.bit_length() - 1):
        out = []
        for j in range(k // 2):
            a, b = rows[j], rows[j + k // 2]
            out += [builder.shuffle_vector(a, b, _mask(lo)),
                    builder.shuffle_vector(a, b, _mask(hi))]
        rows = out
    return rows


def _make_transpose_zip(wide_in: bool):
    def _transpose_zip(typingctx, srcp, s, ss, dstp, d, ds):
        """``dst[d + a*ds + b] = src[s + a + b*ss]`` for ``_LANES`` squares of ``k = 16 /
        unit`` (one lane each): with ``wide_in``, side by side along ``a`` (``k`` loads of
        a 64-byte source row, ``4k`` stores of 16 bytes: the source is the strided side
        and gets whole lines, as in a pack), else along ``b`` (``4k`` loads of 16 bytes
        joined into ``k`` rows, ``k`` stores of 64 bytes: the destination gets whole
        lines, as in an unpack). The lanes' squares are transposed by ``_zip_rounds``,
        whose unpack instructions, unlike general shuffles, run two or more a cycle."""
        unit = srcp.dtype.bitwidth // 8
        k = _LANE // unit

        def codegen(context, builder, signature, args):
            sp, s, ss, dp, d, ds = args
            elty = context.get_value_type(signature.args[0].dtype)
            row_ty = ir.VectorType(elty, k * _LANES).as_pointer()
            lane_ty = ir.VectorType(elty, k).as_pointer()

            def at(base, stride, i):
                return builder.add(base, builder.mul(stride, ir.Constant(stride.type, i)))

            def load(ptr, i, ty):
                return builder.load(builder.bitcast(builder.gep(ptr, [i]), ty), align=unit)

            def store(vec, i, ty):
                builder.store(vec, builder.bitcast(builder.gep(dp, [i]), ty), align=unit)

            def join(parts):
                while len(parts) > 1:
                    n = 2 * parts[0].type.count
                    parts = [builder.shuffle_vector(x, y, _mask(list(range(n))))
                             for x, y in zip(parts[::2], parts[1::2])]
                return parts[0]

            if wide_in:
                rows = [load(sp, at(s, ss, j), row_ty) for j in range(k)]
            else:
                rows = [join([load(sp, at(s, ss, lane * k + j), lane_ty)
                              for lane in range(_LANES)]) for j in range(k)]
            rows = _zip_rounds(builder, rows, k)
            if not wide_in:
                for i in range(k):
                    store(rows[i], at(d, ds, i), row_ty)
                return context.get_dummy_value()
            for lane in range(_LANES):  # in destination order (the stores combine better)
                for i in range(k):
                    part = builder.shuffle_vector(rows[i], rows[i],
                                                  _mask(list(range(lane * k, lane * k + k))))
                    store(part, at(d, ds, lane * k + i), lane_ty)
            return context.get_dummy_value()

        sig = types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp)
        return sig, codegen

    return intrinsic(_transpose_zip)


# ``_zip_in``: squares side by side along the destination rows (64-byte source rows);
# ``_zip_out``: along the source rows (64-byte destination rows).
_zip_in = _make_transpose_zip(True)
_zip_out = _make_transpose_zip(False)


@intrinsic
def _side(typingctx, ptr):
    """``_SIDE`` of a pointer's unit (a compile-time constant)."""
    k = _SIDE[ptr.dtype.bitwidth // 8]

    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, k)

    return types.intp(ptr), codegen


def _make_rows_to_lines(cols: int):
    def _rows_to_lines(typingctx, srcp, s, ss, dstp, d, p, carry, first):
        """Rows of ``cols`` (8 or 16) 8-byte units, consecutive in the destination from
        ``dst[d]``, gathered from ``src[s + a + b*ss]`` (row a, column b): ``64 / cols``
        rows (512 bytes), transposed in registers and streamed as aligned lines though
        ``dst + d`` is ``p`` units (0 to 7) past a line. The first ``8 - p`` units of the
        512 bytes end the line begun by the previous call, whose last ``p`` units it left in
        ``carry`` (a line-aligned scratch line); ``first`` (no previous call) leaves that
        line to the caller. cols 16: the 8x8 transpose of rows ``k`` and ``k + 8``
        side by side gives the 4 rows' halves."""

        def codegen(context, builder, signature, args):
            sp, s, ss, dp, d, p, cp, first = args
            elty = context.get_value_type(signature.args[0].dtype)
            vty = ir.VectorType(elty, 8)
            align = elty.width // 8

            def load(offset, n):
                at = builder.add(s, builder.mul(ss, ir.Constant(ss.type, offset)))
                ptr = builder.bitcast(builder.gep(sp, [at]), ir.VectorType(elty, n).as_pointer())
                return builder.load(ptr, align=align)

            if cols == 8:
                rows = [load(k, 8) for k in range(8)]
            else:
                rows = [builder.shuffle_vector(load(k, 4), load(k + 8, 4), _mask(list(range(8))))
                        for k in range(8)]
            rows = _rounds8(builder, rows)
            z = rows if cols == 8 else [rows[i // 2 + 4 * (i % 2)] for i in range(8)]

            def store(vec, at):
                ptr = builder.bitcast(builder.gep(dp, [at]), vty.as_pointer())
                _nontemporal(builder, builder.store(vec, ptr, align=_LINE))

            cptr = builder.bitcast(cp, vty.as_pointer())

            def shifted(v):
                mask = _mask(list(range(8 - v, 16 - v)))
                start = builder.sub(d, ir.Constant(d.type, v))
                with builder.if_then(builder.icmp_signed("==", first,
                                                         ir.Constant(first.type, 0))):
                    store(builder.shuffle_vector(builder.load(cptr, align=_LINE), z[0], mask),
                          start)
                for k in range(1, 8):
                    store(builder.shuffle_vector(z[k - 1], z[k], mask),
                          builder.add(start, ir.Constant(d.type, 8 * k)))
                builder.store(z[7], cptr, align=_LINE)

            def whole():
                for k in range(8):
                    store(z[k], builder.add(d, ir.Constant(d.type, 8 * k)))

            _constant_cases(builder, p, range(1, 8), shifted, whole)
            return context.get_dummy_value()

        sig = types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp, dstp,
                         types.intp)
        return sig, codegen

    return intrinsic(_rows_to_lines)


_rows8_to_lines = _make_rows_to_lines(8)
_rows16_to_lines = _make_rows_to_lines(16)


def _make_transpose8(streaming: bool):
    def _transpose8(typingctx, srcp, s, ss, dstp, d, ds):
        sig = types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp)
        return sig, lambda context, builder, signature, args: _transpose8_codegen(
            context, builder, signature, args, streaming)

    return intrinsic(_transpose8)


# ``_transpose8`` stores to the cache; ``_transpose8_stream`` writes 8 whole lines around it.
_transpose8 = _make_transpose8(False)
_transpose8_stream = _make_transpose8(True)

def _plane_rounds(npos: int, pack: bool):
    """The shuffle network of ``_transpose_planes`` for lines of ``npos`` units: rounds of
    ``(a, b, mask)`` (each output vector a 2-input shuffle of vectors ``a`` and ``b`` of the
    round before), then the output vectors in the order they are stored. Packing, the input
    is a line of each of the 16 channel planes; each round pairs vectors of adjacent channel
    blocks over the same positions and splits the positions in two, so the channels a
    position holds double until a vector is ``npos / 16`` positions x 16 channels,
    position-major: one packed line. Unpacking, the same with positions and channels
    swapped: from 16 packed lines to one line of each plane."""
    per = npos // ROWS16
    if pack:
        vecs = [[(c, p) for p in range(npos)] for c in range(ROWS16)]
    else:
        vecs = [[(c, p) for p in range(per * k, per * (k + 1)) for c in range(ROWS16)]
                for k in range(ROWS16)]
    split, merge = (1, 0) if pack else (0, 1)  # the label halved and the one gathered
    whole = ROWS16 if pack else npos
    rounds = []
    while len({lab[merge] for lab in vecs[0]}) < whole:
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, v in enumerate(vecs):
            groups.setdefault(tuple(sorted({lab[split] for lab in v})), []).append(i)
        out, steps = [], []
        for keys, idx in groups.items():
            idx.sort(key=lambda i: min(lab[merge] for lab in vecs[i]))
            for a, b in zip(idx[::2], idx[1::2]):
                where = {lab: k for k, lab in enumerate(vecs[a] + vecs[b])}
                half = len(keys) // 2
                for part in (set(keys[:half]), set(keys[half:])):
                    labels = sorted((lab for lab in where if lab[split] in part),
                                    key=lambda lab: (lab[split], lab[merge]))
                    steps.append((a, b, [where[lab] for lab in labels]))
                    out.append(labels)
        rounds.append(steps)
        vecs = out
    return rounds, sorted(range(len(vecs)), key=lambda i: vecs[i][0][split])


ROWS16 = 16  # the channels of an NCHW16c tile


def _planes_network(builder, sp, s, ss, vty, pack: bool):
    """The 16 output vectors of ``_plane_rounds``' network, in store order, from the 16 lines
    ``src[s + c*ss]`` (vectors ``vty``)."""
    vecs = [builder.load(builder.bitcast(builder.gep(sp, [builder.add(
        s, builder.mul(ss, ir.Constant(ss.type, c)))]), vty.as_pointer()),
        align=vty.element.width // 8) for c in range(ROWS16)]
    rounds, order = _plane_rounds(vty.count, pack)
    for steps in rounds:
        vecs = [builder.shuffle_vector(vecs[a], vecs[b], _mask(m)) for a, b, m in steps]
    return [vecs[i] for i in order]


def _planes_codegen(pack: bool, blocks: int = 1, streaming: bool = True):
    """The codegen of ``_transpose_planes`` (``pack``), ``_untranspose_planes`` and, with
    ``blocks == 2``, ``_untranspose_planes2``: ``blocks`` consecutive groups of 16 lines,
    each plane's ``blocks`` lines stored one after the other; not ``streaming``
    (``_transpose_planes_put``, ``_untranspose_planes_put``): plain stores, aligned to a
    unit."""

    def codegen(context, builder, signature, args):
        sp, s, ss, dp, d, ds = args
        elty = context.get_value_type(signature.args[0].dtype)
        npos = 8 * _LINE // elty.width
        vty = ir.VectorType(elty, npos)

        def at(base, stride, k):
            return builder.add(base, builder.mul(stride, ir.Constant(stride.type, k)))

        # block ``blk``'s 16 lines follow the block before
        outs = [_planes_network(builder, sp, at(s, ss, blk * ROWS16), ss, vty, pack)
                for blk in range(blocks)]
        for k in range(ROWS16):
            for blk, vecs in enumerate(outs):
                at_k = builder.add(at(d, ds, k), ir.Constant(d.type, blk * npos))
                ptr = builder.bitcast(builder.gep(dp, [at_k]), vty.as_pointer())
                if streaming:
                    _nontemporal(builder, builder.store(vecs[k], ptr, align=_LINE))
                else:
                    builder.store(vecs[k], ptr, align=elty.width // 8)
        return context.get_dummy_value()

    return codegen


@intrinsic
def _transpose_planes(typingctx, srcp, s, ss, dstp, d, ds):
    """``dst[d + p*16 + c] = src[s + c*ss + p]`` for 16 channels ``c`` and the ``p`` of one
    line of units (64, 32 or 16 positions of 1-, 2- or 4-byte units): 16 line loads, one
    from each channel plane, a network of 2-input shuffles (``_plane_rounds``: 4 rounds of 16)
    and 16 aligned non-temporal line stores, ``ds`` (a line) apart (``dst + d`` 64-byte
    aligned)."""
    return types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp), \
        _planes_codegen(True)


def _make_planes_put(pack: bool):
    def _planes_put(typingctx, srcp, s, ss, dstp, d, ds):
        """``_transpose_planes`` (``pack``) or ``_untranspose_planes`` of single bytes with
        plain stores (in-cache 16-row bands, ``bands._pack_cols``, ``bands._unpack_cols``);
        nothing for wider units (never called)."""
        sig = types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp)
        if srcp.dtype.bitwidth != 8:
            return sig, lambda context, builder, signature, args: context.get_dummy_value()
        return sig, _planes_codegen(pack, streaming=False)

    return intrinsic(_planes_put)


_transpose_planes_put = _make_planes_put(True)
_untranspose_planes_put = _make_planes_put(False)


@intrinsic
def _untranspose_planes(typingctx, srcp, s, ss, dstp, d, ds):
    """The inverse of ``_transpose_planes``: ``dst[d + c*ds + p] = src[s + p*16 + c]``, the
    16 packed lines ``ss`` (a line) apart, each plane's line stored aligned and
    non-temporal (``dst + d`` and ``ds`` whole lines)."""
    return types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp), \
        _planes_codegen(False)


def _seams_codegen(context, builder, signature, args):
    """The codegen of ``_untranspose_seams``."""
    sp, sh, st, ss, dp, d, ds, h = args
    elty = context.get_value_type(signature.args[0].dtype)
    npos = 8 * _LINE // elty.width
    vty = ir.VectorType(elty, npos)
    heads = _planes_network(builder, sp, sh, ss, vty, False)
    tails = _planes_network(builder, sp, st, ss, vty, False)
    ptrs = [builder.bitcast(builder.gep(dp, [builder.add(d, builder.mul(
        ds, ir.Constant(ds.type, c)))]), vty.as_pointer()) for c in range(ROWS16 - 1)]

    def seams(v):
        for c in range(ROWS16 - 1):
            line = builder.shuffle_vector(tails[c], heads[c + 1],
                                          _mask(list(range(v, v + npos))))
            _nontemporal(builder, builder.store(line, ptrs[c], align=_LINE))

    _constant_cases(builder, h, range(1, npos), seams, lambda: None)
    return context.get_dummy_value()


@intrinsic
def _untranspose_seams(typingctx, srcp, sh, st, ss, dstp, d, ds, h):
    """The lines where one plane ends and the next begins, when the 16 planes follow one
    another (``ds`` units apart, each ``ds`` long, a whole number of lines) and start ``h``
    units (0 < h < a line) before a line: ``_untranspose_planes`` of the first line of
    positions (packed lines at ``src + sh``) and of the last (``src + st``), and for planes
    ``c < 15`` the last ``line - h`` positions of plane ``c`` with the first ``h`` of plane
    ``c + 1`` stored as one aligned non-temporal line at ``dst + d + c*ds`` (``d``: plane
    0's last line). Written unit by unit, each of these lines was two partial lines a band
    apart in time."""
    sig = types.void(srcp, types.intp, types.intp, types.intp, dstp, types.intp, types.intp,
                     types.intp)
    return sig, _seams_codegen


@intrinsic
def _untranspose_planes2(typingctx, srcp, s, ss, dstp, d, ds):
    """``_untranspose_planes`` of two lines of positions (32 packed lines ``ss`` apart), each
    plane's two lines stored one after the other: 0.78-0.96 of the fastest copy at 64 and
    256 MiB where two calls of one line (each plane written a line in turn) ran at 0.65-0.81
    (NCHW16c f32, bf16, i8; T(16,2) i8 and bf16; see ``_transpose8_pair``)."""
    return types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp), \
        _planes_codegen(False, 2)


@intrinsic
def _fence(typingctx):
    """A store fence: streaming stores are weakly ordered and must be fenced before return."""

    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


def _make_prefetch(write: bool):
    def _prefetch(typingctx, ptr, at):
        """A prefetch of the line holding unit ``at``, for writing (``prefetchw``: the line
        is fetched for ownership ahead of the stores that fill it) or reading. A hint: it
        never faults, so it may reach past the end of a buffer."""

        def codegen(context, builder, signature, args):
            p, at = args
            i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
            fn = builder.module.declare_intrinsic("llvm.prefetch", fnty=fnty)
            addr = builder.bitcast(builder.gep(p, [at]), i8p)
            builder.call(fn, [addr, ir.Constant(i32, int(write)), ir.Constant(i32, 3),
                              ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return types.void(ptr, types.intp), codegen

    return intrinsic(_prefetch)


_prefetch_write = _make_prefetch(True)
_prefetch_read = _make_prefetch(False)
