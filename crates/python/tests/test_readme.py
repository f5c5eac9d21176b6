"""The README's "From Python" example runs as written."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_readme_python_example_runs():
    text = (ROOT / "README.md").read_text()
    section = text.split("## From Python", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "the README has a python block under 'From Python'"
    exec(compile(blocks[0], "README.md", "exec"), {})


def test_docstring_examples_run():
    import doctest

    import spantree

    result = doctest.testmod(spantree)
    assert result.attempted >= 2 and result.failed == 0
