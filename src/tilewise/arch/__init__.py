"""tilewise.arch: machine descriptions (``spec.py``: the values; ``loader.py``: YAML and presets).

``spec.py`` imports nothing of the loader; the loader builds the values. Use
:func:`tilewise.arch.loader.load_arch` (a preset name, a YAML path or an Arch) and
:func:`tilewise.arch.loader.preset_names`.
"""
