"""The examples in the module docstrings are real: run them."""

import doctest

import pytest

import tilewise.attention
import tilewise.blocked.kernels
import tilewise.blocked.layernorm


@pytest.mark.parametrize("module", [tilewise.attention, tilewise.blocked.kernels,
                                    tilewise.blocked.layernorm], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
