"""A solution file: workload + architecture + mapping in one JSON document (``tilewise run``).

Schema (all keys required except ``seed``)::

    {"workload": {"constructor": "gemm", "args": {"M": 40, "N": 48, "K": 32, "dtype": "i8"}},
     "arch": "aie-4x2",
     "mapping": "ddr[m40 n48 k32] mnk | memtile[m32 n32 k16] kmn | core[m16 n8 k16] ; rows=n4",
     "seed": 0}

- ``workload``: either a constructor call ``{"constructor": name, "args": {...}}`` (name one of
  gemm, batched_gemm, conv2d, gemm_chain, mha, layernorm, einsum; args as in Python), or the
  full IR ``{"name", "dims": {dim: size}, "ops": [{"name", "kind", "dtype", "output",
  "inputs", "state", "ops_per_point", "attrs"}]}`` with tensors ``{"name", "dtype", "axes":
  ["m", "p*2 + r - 1"], "shape", "lanes"}`` (what :func:`workload_to_dict` writes; it carries
  attrs such as ``"causal": true`` of an attention softmax);
- ``arch``: a preset name or an arch spec dict (the YAML schema, :meth:`Arch.to_dict`);
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

CONSTRUCTORS = ("gemm", "batched_gemm", "conv2d", "gemm_chain", "mha", "layernorm", "einsum")


@dataclass(frozen=True)
class SolutionFile:
    """A workload, the arch it is mapped onto (an Arch or a preset name) and the mapping."""

    workload: object
    arch: object
    mapping: object
    seed: int = 0

    def to_dict(self) -> dict:
        arch = self.arch if isinstance(self.arch, str) else self.arch.to_dict()
        return {"workload": workload_to_dict(self.workload), "arch": arch,
                "mapping": self.mapping.to_dict(), "seed": self.seed}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str | dict, source: str = "<json>") -> "SolutionFile":
        """Parse a solution document (text or parsed dict); SpecError/MappingError/WorkloadError
        name the key at fault."""
        from ..arch.spec import Arch
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
            arch = Arch.from_dict(arch, f"{source}: arch")
        elif isinstance(arch, str):
            Arch.preset(arch)  # a clear error now for an unknown preset
        else:
            raise SpecError(f"{source}: arch must be a preset name or a spec object, got {arch!r}")
        m = data["mapping"]
        mapping = Mapping.parse(m) if isinstance(m, str) else Mapping.from_json(m)
        seed = data.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise SpecError(f"{source}: seed {seed!r} must be a non-negative integer")
        return cls(workload, arch, mapping, seed)

    @classmethod
    def load(cls, path: str | PathLike) -> "SolutionFile":
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise SpecError(f"cannot read solution file {str(path)!r}: {e.strerror}") from None
        return cls.from_json(text, str(path))


def _tensor_dict(t) -> dict:
    return {"name": t.name, "dtype": t.dtype.name, "axes": [str(a) for a in t.axes],
            "shape": list(t.shape), "lanes": t.lanes}


def workload_to_dict(w) -> dict:
    """The full IR of a workload as plain JSON-able objects (round-trips with the reader)."""
    return {"name": w.name, "dims": dict(w.sizes), "roles": [list(r) for r in w.roles],
            "ops": [{"name": op.name, "kind": op.kind, "dtype": op.dtype.name,
                     "output": _tensor_dict(op.output),
                     "inputs": [_tensor_dict(t) for t in op.inputs],
                     "state": [_tensor_dict(t) for t in op.state],
                     "ops_per_point": op.ops_per_point, "attrs": dict(op.attrs)}
                    for op in w.ops]}


def workload_from_dict(data) -> object:
    """A Chain from a constructor call or the full IR form (see the module docstring)."""
    from ..ir import library
    from ..ir.workload import Chain, Dim, Op, Tensor

    if not isinstance(data, dict):
        raise WorkloadError(f"workload must be an object, got {data!r}")
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
                            "{'name', 'dims': {dim: size}, 'ops': [{'name', 'kind', 'dtype', "
                            "'output', 'inputs', ...}]} or {'constructor', 'args'}") from None
