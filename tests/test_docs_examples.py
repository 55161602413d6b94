"""Every ``$ tilewise ...`` example in the README and docs/ prints what the docs say
(scripts/docs_examples.py: wall times and ``...`` elisions aside). A stale example fails here;
``python scripts/docs_examples.py --update`` rewrites it from a real run."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _runner():
    spec = importlib.util.spec_from_file_location("docs_examples", ROOT / "scripts" / "docs_examples.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["docs_examples"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_every_docs_example_prints_what_the_docs_show(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    runner = _runner()
    assert len(list(runner.doc_files())) > 5
    stale = runner.check()
    assert not stale, "stale docs examples (run scripts/docs_examples.py --update):\n" + "\n".join(stale)


def test_the_runner_sees_a_stale_output(tmp_path, monkeypatch):
    runner = _runner()
    doc = tmp_path / "x.md"
    doc.write_text("```text\n$ tilewise layout \"f32[2,3]{1,0}\"\nsomething else\n```\n")
    monkeypatch.setattr(runner, "doc_files", lambda: [doc])
    monkeypatch.setattr(runner, "ROOT", tmp_path)
    assert len(runner.check()) == 1
    runner.check(update=True)
    assert runner.check() == [] and "something else" not in doc.read_text()
