"""A solution file: workload + architecture + mapping in one JSON document (``tilewise run``).

Schema (all keys required except ``seed``)::

    {"workload": {"gemm": {"m": 40, "n": 48, "k": 32, "dtype": "i8"}},
     "arch": "aie-4x2",
     "mapping": "ddr[m40 n48 k32] mnk | memtile[m32 n32 k16] kmn | core[m16 n8 k16] ; rows=n4",
     "seed": 0}

- ``workload``: either ``{KIND: {parameters}}`` with a kind of the registry
  :mod:`tilewise.ir.kinds` and its parameters, as in problem lists and on the command line
  (``gemm``, ``batched-gemm``, ``conv2d``, ``mha``, ``layernorm``, ``chain``, ``einsum``), or
  the full IR ``{"name", "dims": {dim: size}, "ops": [{"name", "kind", "dtype", "output",
  "inputs", "state", "ops_per_point", "attrs"}]}`` with tensors ``{"name", "dtype", "axes":
  ["m", "p*2 + r - 1"], "shape", "lanes"}`` (it carries attrs such as ``"causal": true`` of an
  attention softmax). :func:`workload_to_dict` writes the kind form when the workload is one
  of the kinds, else the IR. The former constructor-call form ``{"constructor": "gemm",
  "args": {"M": 40, ...}}`` is still read;
- ``arch``: a preset name, a YAML path or an arch spec dict (the YAML schema,
  :func:`~tilewise.arch.loader.arch_to_dict`);
- ``mapping``: the mapping text form or :meth:`Mapping.to_dict`;
- ``seed``: seed of the random inputs (default 0).

Example::

    >>> from tilewise import gemm, Mapping
    >>> s = SolutionFile(gemm(4, 4, 4), "ascend-vec", Mapping.parse("gm[m4 n4 k4] mnk | ub[m2 n4 k4]"))
    >>> SolutionFile.from_json(s.to_json()) == s
    True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from os import PathLike

from ..errors import SpecError, TilewiseError, WorkloadError

# the former schema {"constructor": name, "args": {...}} (read only): library constructor names
CONSTRUCTORS = ("gemm", "batched_gemm", "conv2d", "gemm_chain", "mha", "layernorm", "einsum")


@dataclass(frozen=True)
class SolutionFile:
    """A workload, the arch it is mapped onto (an Arch, or a preset name or YAML path as
    written in the file) and the mapping."""

    workload: object
    arch: object
    mapping: object
    seed: int = 0

    def to_dict(self) -> dict:
        from ..arch.loader import arch_to_dict

        arch = self.arch if isinstance(self.arch, str) else arch_to_dict(self.arch)
        return {"workload": workload_to_dict(self.workload), "arch": arch,
                "mapping": self.mapping.to_dict(), "seed": self.seed}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str | dict, source: str = "<json>") -> "SolutionFile":
        """Parse a solution document (text or parsed dict); SpecError/MappingError/WorkloadError
        name the key at fault."""
        from ..arch.loader import arch_from_dict, load_arch
        from ..mapping import Mapping

        if isinstance(text, str):
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                raise SpecError(f"{source}: not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
        else:
            data = text
        if not isinstance(data, dict):
            raise SpecError(f"{source}: a solution is a JSON object with keys workload, arch, mapping")
        missing = [k for k in ("workload", "arch", "mapping") if k not in data]
        if missing:
            raise SpecError(f"{source}: missing key {', '.join(missing)}; a solution has workload, "
                            "arch, mapping (and optionally seed)")
        unknown = [k for k in data if k not in ("workload", "arch", "mapping", "seed")]
        if unknown:
            raise SpecError(f"{source}: unknown key {', '.join(unknown)}; valid: workload, arch, "
                            "mapping, seed")
        workload = workload_from_dict(data["workload"])
        arch = data["arch"]
        if isinstance(arch, dict):
            arch = arch_from_dict(arch, f"{source}: arch")
        elif isinstance(arch, str):
            load_arch(arch)  # a clear error now for an unknown preset or a missing file
        else:
            raise SpecError(f"{source}: arch must be a preset name, a YAML path or a spec "
                            f"object, got {arch!r}")
        m = data["mapping"]
        mapping = Mapping.parse(m) if isinstance(m, str) else Mapping.from_json(m)
        seed = data.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise SpecError(f"{source}: seed {seed!r} must be a non-negative integer")
        return cls(workload, arch, mapping, seed)

    @classmethod
    def load(cls, path: str | PathLike) -> "SolutionFile":
        from ..textfile import read_text

        return cls.from_json(read_text(path, "solution file", SpecError), str(path))


def _tensor_dict(t) -> dict:
    return {"name": t.name, "dtype": t.dtype.name, "axes": [str(a) for a in t.axes],
            "shape": list(t.shape), "lanes": t.lanes}


def workload_to_dict(w) -> dict:
    """``{KIND: {parameters}}`` when the workload is one of the kinds (:mod:`tilewise.ir.kinds`),
    else its full IR as plain JSON-able objects; :func:`workload_from_dict` reads both back."""
    from ..ir.kinds import params_of

    found = params_of(w)
    if found is not None:
        kind, params = found
        return {kind: params}
    return workload_ir(w)


def workload_ir(w) -> dict:
    """The full IR of a workload as plain JSON-able objects (round-trips with the reader)."""
    return {"name": w.name, "dims": dict(w.sizes), "roles": [list(r) for r in w.roles],
            "ops": [{"name": op.name, "kind": op.kind, "dtype": op.dtype.name,
                     "output": _tensor_dict(op.output),
                     "inputs": [_tensor_dict(t) for t in op.inputs],
                     "state": [_tensor_dict(t) for t in op.state],
                     "ops_per_point": op.ops_per_point, "attrs": dict(op.attrs)}
                    for op in w.ops]}


def workload_from_dict(data) -> object:
    """A Chain from ``{KIND: {parameters}}``, the full IR form or the former constructor call
    (see the module docstring)."""
    from ..ir import library
    from ..ir.kinds import KINDS, from_entry, kind
    from ..ir.workload import Chain, Dim, Op, Tensor

    if not isinstance(data, dict):
        raise WorkloadError(f"workload must be an object, got {data!r}")
    if len(data) == 1 and "constructor" not in data and "name" not in data:
        (name, _), = data.items()
        kind(name)  # WorkloadError naming an unknown kind and the valid ones
        return from_entry(data)
    if "constructor" in data:
        name, args = data["constructor"], data.get("args", {})
        if name not in CONSTRUCTORS:
            raise WorkloadError(f"workload constructor {name!r} unknown; valid: {', '.join(CONSTRUCTORS)}")
        if not isinstance(args, dict):
            raise WorkloadError(f"workload args must be an object of keyword arguments, got {args!r}")
        if name == "einsum":
            args = dict(args)
            spec = args.pop("spec", None)
            if spec is None:
                raise WorkloadError("workload einsum needs args.spec, e.g. \"mk,kn->mn\"")
            return library.einsum(spec, **args)
        try:
            return getattr(library, name)(**args)
        except TypeError as e:
            raise WorkloadError(f"workload {name}: bad arguments {sorted(args)} ({e})") from None
    try:
        def tensor(d):
            return Tensor(d["name"], d["dtype"], tuple(d["axes"]), tuple(d["shape"]), d.get("lanes", 1))

        dims = tuple(Dim(k, v) for k, v in data["dims"].items())
        ops = tuple(Op(o["name"], o["kind"], tensor(o["output"]), tuple(map(tensor, o["inputs"])),
                       o["dtype"], tuple(map(tensor, o.get("state", ()))),
                       o.get("ops_per_point", 1), o.get("attrs", {}))
                    for o in data["ops"])
        return Chain(data["name"], dims, ops, tuple(map(tuple, data.get("roles", ()))))
    except TilewiseError:
        raise
    except (KeyError, TypeError, AttributeError) as e:
        raise WorkloadError(f"workload IR is malformed ({type(e).__name__}: {e}); expected "
                            "{KIND: {parameters}} (KIND one of " + ", ".join(KINDS) + ") or "
                            "{'name', 'dims': {dim: size}, 'ops': [{'name', 'kind', 'dtype', "
                            "'output', 'inputs', ...}]}") from None
