"""The examples in the module docstrings are real: run them."""

import doctest

import pytest

import tilewise.tiles.attention
import tilewise.tiles.kernels
import tilewise.tiles.layernorm


@pytest.mark.parametrize("module", [tilewise.tiles.attention, tilewise.tiles.kernels,
                                    tilewise.tiles.layernorm], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
