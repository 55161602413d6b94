import subprocess
import sys

import pytest

import tilewise
from tilewise.cli import main
from tilewise.cli._util import parse_int_list
from tilewise.errors import ParseError


def test_version(capsys):
    assert main(["--version"]) == 0
    assert tilewise.__version__ in capsys.readouterr().out


def test_console_script_help_runs():
    out = subprocess.run([sys.executable, "-m", "tilewise", "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "tilewise" in out.stdout


def test_unknown_command_is_usage_error(capsys):
    assert main(["no-such-command"]) == 2
    assert "No such command" in capsys.readouterr().err


def test_parse_int_list():
    assert parse_int_list("0, 1,2", "list") == (0, 1, 2)
    assert parse_int_list("[3]", "list") == (3,)
    assert parse_int_list("", "list") == ()
    with pytest.raises(ParseError, match="character 3"):
        parse_int_list("1,x", "list")


def test_lazy_exports_resolve():
    for name in tilewise.__all__:
        assert getattr(tilewise, name) is not None
    with pytest.raises(AttributeError):
        tilewise.no_such_name
