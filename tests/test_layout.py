"""The file reads as its docstring says: the map is true, and the API comes first."""

import ast
import re
from pathlib import Path

import petstore_stub as stub

SOURCE = Path(stub.__file__).read_text(encoding='utf-8').splitlines()


def test_the_docstring_map_names_every_banner_in_order():
    block = stub.__doc__.split('The sections, in order:')[1].split('\n\n')[1]
    mapped = [line.strip() for line in block.splitlines()]
    banners = [(number, line.strip('# -=')) for number, line in enumerate(SOURCE, 1)
               if re.match(r'# (-- |Part \d)', line)]
    where = '\n'.join(f'line {number:>5}  {title}' for number, title in banners)
    assert len(mapped) >= 10 and len(mapped) == len(banners), f'the banners are:\n{where}'
    for title, (number, banner) in zip(mapped, banners):
        assert banner.startswith(title), f'the map has {title!r} where line {number} has ' \
                                         f'{banner!r}; the banners are:\n{where}'


def test_a_first_read_meets_the_four_operations_before_any_machinery():
    first = {name: SOURCE.index(next(line for line in SOURCE if line.startswith(name)))
             for name in ('def create_app', 'class PetStore', '# Part 2', 'class DurableTable')}
    assert first['def create_app'] < first['class PetStore'] < first['# Part 2']
    assert first['def create_app'] < 500
    assert first['# Part 2'] < first['class DurableTable']


def test_part_1_uses_no_name_that_part_2_defines():
    tree = ast.parse('\n'.join(SOURCE))
    part_2 = next(n for n, line in enumerate(SOURCE, 1) if line.startswith('# Part 2'))
    later = {target.id if isinstance(target, ast.Name) else target.name
             for node in tree.body if node.lineno > part_2
             for target in ([node] if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                            else getattr(node, 'targets', []))
             if isinstance(target, (ast.Name, ast.FunctionDef, ast.ClassDef))}
    used = {(node.id, node.lineno) for top in tree.body if top.lineno < part_2
            for node in ast.walk(top)
            if isinstance(node, ast.Name) and node.id in later and not in_annotation(top, node)}
    assert not used, f'part 1 uses these names from part 2: {sorted(used)}'


def in_annotation(top: ast.AST, name: ast.Name) -> bool:
    """Whether ``name`` is inside an annotation (a string, under ``from __future__ import
    annotations``, so never looked up at run time)."""
    annotations = [node.annotation for node in ast.walk(top)
                   if isinstance(node, (ast.arg, ast.AnnAssign)) and node.annotation]
    annotations += [node.returns for node in ast.walk(top)
                    if isinstance(node, ast.FunctionDef) and node.returns]
    return any(name in ast.walk(annotation) for annotation in annotations)
