"""Compile emitted MLIR with IREE for this CPU, run it, check it, time it: ``tilewise.compile``.

:func:`compile` emits the module (:mod:`.mlir`) and compiles it through IREE's Python API
(``llvm-cpu``, ``--iree-llvmcpu-target-cpu=host``); the :class:`Compiled` it returns loads into
a runtime context on first call (driver ``local-task``: a thread pool over this machine's
cores; ``local-sync``: one thread). :func:`check` runs it on inputs and compares with the numpy reference
(:func:`tilewise.executor.reference.reference`: integers exact, floats within the executor's
tolerance). :func:`time_interleaved` times several compiled programs on the same inputs, one
call of each in turn per round, and gives each one's median (seconds): a slow phase of a
shared machine hits all of them alike.

IREE is the optional extra ``iree`` (``pip install 'tilewise[iree]'``, packages
``iree-base-compiler`` and ``iree-base-runtime``); without it every function here raises one
:class:`~tilewise.errors.TilewiseError` saying how to install it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import TilewiseError
from .mlir import Emitted, emit_mlir

INSTALL = "pip install 'tilewise[iree]' (iree-base-compiler and iree-base-runtime, 3.13)"
COMPILE_FLAGS = ("--iree-llvmcpu-target-cpu=host",)
DRIVERS = ("local-task", "local-sync")


def require_iree():
    """The IREE compiler and runtime modules; TilewiseError with the install line otherwise."""
    try:
        import iree.compiler as compiler
        import iree.runtime as runtime
    except ImportError:
        raise TilewiseError(f"IREE is not installed; {INSTALL}") from None
    return compiler, runtime


def host_lanes() -> int:
    """32-bit lanes of this CPU's vector registers (16 with AVX-512, 8 with AVX2)."""
    from ..arch.host import cpuinfo_field, vector_unit

    return vector_unit(set(cpuinfo_field("flags").split())).bytes // 4


@dataclass
class Compiled:
    """A compiled program: what was emitted, the IREE module bytes and the seconds it took
    to compile. Calling it runs ``main`` on tilewise-layout inputs (name -> array) and returns
    the output in the tilewise layout."""

    emitted: Emitted
    vmfb: bytes
    compile_s: float
    driver: str = "local-task"
    """IREE's HAL driver: ``local-task`` (a thread pool over the cores) or ``local-sync`` (one
    thread, the caller's: steadier timings on a shared machine)."""
    _main: object = field(default=None, repr=False)
    _device: object = field(default=None, repr=False)

    def _load(self):
        if self._main is None:
            _, rt = require_iree()
            ctx = rt.SystemContext(config=rt.Config(self.driver))
            ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, self.vmfb))
            self._main, self._device = ctx.modules.module.main, ctx.config.device
        return self._main

    def arguments(self, inputs: dict) -> list:
        """The inputs converted to the op's layout and placed on the device (once, so the
        timed calls move no input)."""
        _, rt = require_iree()
        self._load()
        form = self.emitted.form
        return [rt.asdevicearray(self._device, np.ascontiguousarray(o.convert(inputs[o.name])))
                for o in form.inputs]

    def call(self, arguments: list) -> np.ndarray:
        """One run of ``main`` on device arguments; the result in the op's layout."""
        return np.asarray(self._load()(*arguments).to_host())

    def __call__(self, inputs: dict) -> np.ndarray:
        return self.emitted.form.result_back(self.call(self.arguments(inputs)))


def compile(workload, arch=None, mapping=None, lanes: int | None = None,
            driver: str = "local-task") -> Compiled:
    """Emit ``workload`` tiled as ``mapping`` on ``arch`` (None: IREE's default tiling) and
    compile it for this CPU. ``lanes``: 32-bit lanes per vector (default: this CPU's);
    ``driver``: ``local-task`` (all cores) or ``local-sync`` (one thread)."""
    if driver not in DRIVERS:
        raise TilewiseError(f"IREE driver {driver!r} unknown; valid: {', '.join(DRIVERS)}")
    compiler, _ = require_iree()
    emitted = emit_mlir(workload, arch, mapping, host_lanes() if lanes is None else lanes)
    t0 = time.perf_counter()
    try:
        vmfb = compiler.compile_str(emitted.text, target_backends=["llvm-cpu"],
                                    extra_args=list(COMPILE_FLAGS))
    except compiler.CompilerToolError as e:
        first = next((line for line in str(e).splitlines() if "error:" in line), str(e)[:300])
        raise TilewiseError(f"IREE could not compile {emitted.form.op} with lowering config "
                            f"{emitted.config.attr() if emitted.config else '(default)'}: "
                            f"{first.strip()}") from None
    return Compiled(emitted, vmfb, time.perf_counter() - t0, driver)


def check(workload, compiled: Compiled, inputs: dict):
    """Run ``compiled`` on ``inputs`` and compare with the numpy reference: a VerifyReport."""
    from ..executor.interpreter import compare
    from ..executor.reference import output_tensors, reference

    (out,) = output_tensors(workload)
    return compare(workload, {out.name: compiled(inputs)}, reference(workload, inputs))


def time_interleaved(programs: list[Compiled], inputs: dict, rounds: int = 20,
                     warmup: int = 2) -> list[float]:
    """Median seconds per call of each program, calls interleaved round by round."""
    args = [p.arguments(inputs) for p in programs]
    for _ in range(warmup):
        for p, a in zip(programs, args):
            p.call(a)
    samples = [[] for _ in programs]
    for _ in range(rounds):
        for i, (p, a) in enumerate(zip(programs, args)):
            t0 = time.perf_counter()
            p.call(a)
            samples[i].append(time.perf_counter() - t0)
    return [float(np.median(s)) for s in samples]
