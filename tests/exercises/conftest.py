"""``--exercise NAME`` runs the exercise of ``test_NAME.py``; without it, each exercise is
skipped. Run as ``pytest tests/exercises --exercise NAME``: pytest reads this file's option only
when its folder is named on the command line."""

from pathlib import Path

import pytest

EXERCISES = sorted(path.stem.removeprefix('test_')
                   for path in Path(__file__).parent.glob('test_*.py'))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption('--exercise', choices=EXERCISES,
                     help='the exercise to run, from tests/exercises')


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep only the exercise chosen; skip them all, saying how to run each, if none is."""
    chosen = config.getoption('exercise', None)
    here = Path(__file__).parent
    others = [item for item in items if item.path.parent == here
              and item.path.stem.removeprefix('test_') != chosen]
    if chosen is not None:
        config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if item not in others]
    for item in others:
        item.add_marker(pytest.mark.skip(reason='an exercise: pytest tests/exercises --exercise '
                                                + item.path.stem.removeprefix('test_')))
