"""Make tilewise's frozen values picklable (worker processes of :func:`tilewise.search_many`).

Frozen dataclasses keep their dict fields as ``types.MappingProxyType`` (read-only views),
which pickle refuses; a proxy is rebuilt from a plain copy of its dict.
"""

import copyreg
import types


def mappingproxy(d: dict) -> types.MappingProxyType:
    """A read-only view of ``d`` (the unpickling constructor)."""
    return types.MappingProxyType(d)


def _reduce_mappingproxy(m: types.MappingProxyType):
    return mappingproxy, (dict(m),)


copyreg.pickle(types.MappingProxyType, _reduce_mappingproxy)
