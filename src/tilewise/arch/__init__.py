"""tilewise.arch: machine descriptions (``spec.py``: the values; ``loader.py``: YAML and presets).

``spec.py`` imports nothing of the loader; the loader builds the values. Use
:func:`tilewise.arch.loader.load_arch` (a preset name, a YAML path or an Arch).
"""

from .loader import load_preset as _load_preset, preset_names as _preset_names
from .spec import Arch

# Compatibility, to remove once its callers use load_arch / preset_names (blocked/interpreter.py
# resolve(), and tests outside tests/arch): ``Arch.preset(name)`` and ``Arch.presets()``, bound
# here so that spec.py need not import the loader.
Arch.preset = staticmethod(_load_preset)
Arch.presets = staticmethod(_preset_names)
