"""The file reads as its docstring says: the map is true, and the API comes first."""

import re
from pathlib import Path

import petstore_stub as stub

SOURCE = Path(stub.__file__).read_text(encoding='utf-8').splitlines()


def test_the_docstring_map_points_at_each_banner():
    entries = re.findall(r'^    line +(\d+)  (.+)$', stub.__doc__, flags=re.MULTILINE)
    assert len(entries) >= 10
    for number, title in entries:
        now = next(n for n, line in enumerate(SOURCE, 1) if line.startswith('# ') and title in line)
        assert int(number) == now, f'the docstring has {title!r} at line {number}; it is at {now}'
    banners = [line for line in SOURCE if re.match(r'# (-- |Part \d)', line)]
    assert len(banners) == len(entries)


def test_a_first_read_meets_the_four_operations_before_any_machinery():
    first = {name: SOURCE.index(next(line for line in SOURCE if line.startswith(name)))
             for name in ('def create_app', 'class PetStore', '# Part 2', 'class DurableTable')}
    assert first['def create_app'] < first['class PetStore'] < first['# Part 2']
    assert first['def create_app'] < 500
    assert first['# Part 2'] < first['class DurableTable']
