"""The ``tilewise`` command line (click + rich).

Each area registers its commands from its own module (``cli/layout.py``, ``cli/pack.py``, ...)
and imports the library lazily inside the command, so ``tilewise --help`` starts fast. Every
:class:`~tilewise.errors.TilewiseError` becomes one line ``error: ...`` on stderr and exit code 2;
usage errors are click's (exit code 2); success is 0.
"""

from __future__ import annotations

import importlib
import sys

import click

from .._version import __version__
from ..errors import TilewiseError
from . import interrupt


@click.group(
    name="tilewise",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="tilewise")
def app() -> None:
    """Search, describe and compute blocked (tiled) algorithms for tensor operators."""


# Modules under tilewise.cli that define ``register(app)``; one per area.
_COMMAND_MODULES = ("layout", "pack", "arch", "vector", "model", "search", "run", "network",
                    "emit")

for _name in _COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}").register(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tilewise`` console script; returns (and exits with) the exit code."""
    try:
        with interrupt.caught(exiting=argv is None):
            rv = app.main(args=argv, standalone_mode=False, prog_name="tilewise")
            interrupt.check()  # a Ctrl-C whose KeyboardInterrupt was swallowed on the way
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.ClickException as e:
        e.show()
        code = e.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        print("error: interrupted (Ctrl-C)", file=sys.stderr)
        code = 130
    except TilewiseError as e:
        print(f"error: {e}", file=sys.stderr)
        code = 2
    except BrokenPipeError:
        code = 130
    else:
        code = rv if isinstance(rv, int) else 0
    if argv is None:
        sys.exit(code)
    return code
