"""Shared checks of the hostile-input tests (issue 18): a bad input gets one clear error, never
a traceback or a silent success."""

import pytest

from tilewise.cli import main


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture
def fails_clearly(capsys):
    """``fails_clearly(argv, *names)``: the CLI exits non-zero, prints at most 3 non-blank lines
    on stderr (click's usage errors take 3: usage, hint, error), no traceback, and each of
    ``names`` appears in the message (the offending value, what would be valid). Returns stderr."""

    def check(argv, *names):
        code = main([str(a) for a in argv])
        err = capsys.readouterr().err
        assert code != 0, (argv, err)
        assert "Traceback" not in err and len(_lines(err)) <= 3, err
        for name in names:
            assert str(name) in err, (name, err)
        return err

    return check


@pytest.fixture
def succeeds(capsys):
    """``succeeds(argv)``: the CLI exits 0 with nothing on stderr; returns stdout."""

    def check(argv):
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        assert code == 0, (argv, err)
        return out

    return check
