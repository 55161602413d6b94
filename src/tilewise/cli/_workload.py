"""Workload subcommands shared by the CLI commands that take a workload (search, evaluate, ...).

A command such as ``tilewise search`` is a click *group* with one subcommand per workload kind
of the registry :mod:`tilewise.ir.kinds`; each subcommand has that kind's parameters as options
(``--m``, ``--dtype``, ...; an einsum spec is a positional argument) plus the command's own::

    tilewise search gemm --m 512 --n 768 --k 768 --dtype i8 --arch aie-4x2
    tilewise search conv2d --n 1 --c 64 --h 56 --w 56 --k 64 --r 3 --s 3 --padding 1
    tilewise search mha --lq 4096 --lkv 4096 --d 64
    tilewise search layernorm --rows 512 --cols 768
    tilewise search chain --m 512 --k 64 --l 512 --n 64
    tilewise search einsum "mk,kn->mn" --sizes m=64,k=32,n=16

:func:`workload_group` builds such a group; it calls ``run(workload, **options)`` with the built
:class:`~tilewise.ir.workload.Chain` and the command's remaining options.
"""

from __future__ import annotations

from typing import Callable

import click

from ..ir.kinds import KINDS, Kind, Param

_OWN = "_workload_"  # prefix of the click parameter names this module adds
_CLICK_TYPES = {"int": int, "ints": int, "float": float, "dtype": str, "sizes": str, "text": str}


def _option(p: Param) -> Callable:
    if p.type == "spec":
        return click.argument(f"{_OWN}{p.name}", metavar=p.name.upper())
    if p.type == "bool":
        return click.option(f"--{p.name}/--no-{p.name}", f"{_OWN}{p.name}", default=p.default,
                            show_default=True, help=p.doc)
    doc = p.doc + (f" (default: --{p.same_as})" if p.same_as else "")
    # no default at all for a required option: click >= 8.3 takes an explicit None as a value
    default = {} if p.required else {"default": None if p.same_as else p.default}
    return click.option(f"--{p.name.replace('_', '-')}", f"{_OWN}{p.name}",
                        type=_CLICK_TYPES[p.type], required=p.required,
                        show_default=default.get("default") is not None, help=doc, **default)


def workload_options(kind: Kind) -> Callable:
    """A decorator adding ``kind``'s parameters to a click command, as options."""

    def decorate(f: Callable) -> Callable:
        for p in reversed(kind.params):
            f = _option(p)(f)
        return f

    return decorate


def pop_workload(kind: Kind, options: dict, arch_for_default=None):
    """The workload of a subcommand's options; removes this module's keys from ``options``.

    ``arch_for_default``: the command's arch, when ``--dtype`` was left at its default; if the
    arch has no compute rate for that type, the first type of :data:`FALLBACK_DTYPES` it rates
    for every op is used instead, with a note on stderr (a default must work)."""
    mine = {k[len(_OWN):]: options.pop(k) for k in list(options) if k.startswith(_OWN)}
    params = {k: v for k, v in mine.items() if v is not None}
    workload = kind.build(params)
    if arch_for_default is None or "dtype" not in params or _rated(workload, arch_for_default):
        return workload
    for name in FALLBACK_DTYPES:
        other = kind.build({**params, "dtype": name})
        if _rated(other, arch_for_default):
            click.echo(f"note: arch {arch_for_default.name} has no {params['dtype']} rate; "
                       f"--dtype defaults to {name} on it (pass --dtype to choose)", err=True)
            return other
    return workload  # nothing rated: the search names the missing rate


# Default element types tried, in order, when a kind's default is not rated by the arch.
FALLBACK_DTYPES = ("bf16", "f16", "f32", "i16", "i8", "i32")


def _rated(workload, arch) -> bool:
    from ..errors import SpecError
    from ..model.rules import rate

    try:
        for op in workload.ops:
            rate(arch, op)
    except SpecError:
        return False
    return True


def _default_dtype_arch(kw: dict):
    """The arch of a command whose --dtype was left at its default (else None)."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    if ctx.get_parameter_source(f"{_OWN}dtype") is not ParameterSource.DEFAULT or \
            not isinstance(kw.get("arch"), str):
        return None
    from ..arch.loader import load_arch

    return load_arch(kw["arch"], "--arch")


def workload_group(name: str, help: str, options: list[Callable],
                   run: Callable[..., None], rated_default: bool = False) -> click.Group:
    """A click group ``name`` with one subcommand per workload kind.

    Each subcommand gets the kind's parameters plus ``options`` (click decorators, applied in
    order) and calls ``run(workload, **remaining_options)``. ``rated_default``: the command
    costs the workload on its ``--arch``, so a default ``--dtype`` the arch has no rate for
    falls back to one it has (:func:`pop_workload`).
    """
    group = click.Group(name=name, help=help)
    for kind in KINDS.values():
        def callback(_kind=kind, **kw):
            arch = _default_dtype_arch(kw) if rated_default else None
            return run(pop_workload(_kind, kw, arch), **kw)

        f = callback
        for opt in reversed(options):
            f = opt(f)
        f = workload_options(kind)(f)
        group.add_command(click.command(name=kind.name, help=kind.doc)(f))
    return group
