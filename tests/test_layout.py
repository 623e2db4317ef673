"""The file reads as its docstring says: the map is true, and the API comes first."""

import ast
import json
import re
from pathlib import Path

import pytest

import petstore_stub as stub

SOURCE = Path(stub.__file__).read_text(encoding='utf-8').splitlines()


def test_the_docstring_map_names_every_banner_in_order_and_its_first_definition():
    block = stub.__doc__.split('The sections, in order')[1].split('\n\n')[1]
    mapped = [re.fullmatch(r'(.*?)(?:  \((\w+)\))?', line.strip()).groups()
              for line in block.splitlines()]
    banners = [(number, line.strip('# -=')) for number, line in enumerate(SOURCE, 1)
               if re.match(r'# (-- |Part \d)', line)]
    where = '\n'.join(f'line {number:>5}  {title}' for number, title in banners)
    assert len(mapped) >= 10 and len(mapped) == len(banners), f'the banners are:\n{where}'
    for (title, first), (number, banner) in zip(mapped, banners):
        assert banner.startswith(title), f'the map has {title!r} where line {number} has ' \
                                         f'{banner!r}; the banners are:\n{where}'
        if banner.startswith('Part '):
            continue
        following = SOURCE[number:]
        assert first is not None, f'the map names no definition for {title!r}'
        section = following[:next((n for n, line in enumerate(following)
                                   if re.match(r'# (-- |=)', line)), len(following))]
        # A def or a class (the plugin's are inside an if), or in a section of none, a constant.
        names = [name for line in section for name in re.findall(r'^(?:    )?(?:def|class) (\w+)',
                                                                  line)]
        names = names or [name for line in section for name in re.findall(r'^([A-Z_]+) =', line)]
        assert first == names[0], f'{title!r} begins with {names[0]}, not {first}'


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


# -- each fact of the API stated once, and its copies held to it -------------------

DATA = Path(stub.__file__).parent / 'data'


def enums_with_a_status(document: object, where: str = '') -> dict[str, list]:
    """Every ``enum`` in a JSON document that holds one of PET_STATUSES, by its place."""
    found = {}
    if isinstance(document, dict):
        for key, value in document.items():
            if key == 'enum' and set(value) & set(stub.PET_STATUSES):
                found[f'{where}/enum'] = value
            else:
                found.update(enums_with_a_status(value, f'{where}/{key}'))
    elif isinstance(document, list):
        for n, value in enumerate(document):
            found.update(enums_with_a_status(value, f'{where}/{n}'))
    return found


def status_copies() -> dict[str, list[str]]:
    """Each copy of PET_STATUSES, by the place a maintainer changes it."""
    copies = {}
    for name in ('openapi.json', 'admin-openapi.json'):
        document = json.loads((DATA / name).read_text(encoding='utf-8'))
        for where, enum in enums_with_a_status(document).items():
            copies[f'data/{name}, {where}'] = enum
    page = (DATA / 'index.html').read_text(encoding='utf-8')
    selects = re.findall(r'<select name="status">(.*?)</select>', page, flags=re.DOTALL)
    for n, select in enumerate(selects, 1):
        copies[f'data/index.html, <select name="status"> {n}'] = re.findall(
            r'<option>([^<]*)</option>', select)
    listed = re.findall(r'&status=(\S+)', stub.__doc__ or '')
    copies["the module's docstring, listPets"] = '|'.join(listed).split('|')
    return copies


def test_the_page_and_both_documents_and_the_docstring_copy_each_status():
    assert len(status_copies()) == 5  # the two documents, the page's two lists, the docstring


@pytest.mark.parametrize('copy', status_copies())
def test_each_copy_of_the_pet_statuses_lists_pet_statuses_in_order(copy):
    assert status_copies()[copy] == list(stub.PET_STATUSES), \
        f'{copy} does not list PET_STATUSES: see "Adding a status" in docs/code.md'


def test_every_function_and_class_the_walk_through_part_2_names_is_in_the_module():
    code_md = (Path(stub.__file__).parent / 'docs' / 'code.md').read_text(encoding='utf-8')
    walk = code_md.split('\n## A walk through part 2')[1].split('\n## ')[0]
    named = re.findall(r'`([A-Za-z_][\w.]*?)(\(\))?`', walk)
    functions = [name for name, call in named if call]
    classes = [name for name, call in named
               if not call and name[:1].isupper() and not name.isupper() and '.' not in name]
    assert len(functions) > 20 and {'Exchange', 'StubStore', 'Tls'} <= set(classes)
    defined = {match for line in SOURCE for match in re.findall(r'^\s*def (\w+)\(', line)}
    for name in functions:
        owner, _, function = name.rpartition('.')
        if owner:
            assert callable(getattr(getattr(stub, owner), function, None)), name
        else:
            assert function in defined, name
    for name in classes:
        assert isinstance(getattr(stub, name, None), type), name


def test_the_length_docs_code_gives_part_1_is_part_1_s_to_ten_lines():
    code_md = (Path(stub.__file__).parent / 'docs' / 'code.md').read_text(encoding='utf-8')
    (said,) = re.findall(r'part 1, in order: about (\d+) lines', code_md)
    start, end = (next(n for n, line in enumerate(SOURCE) if line.startswith(banner))
                  for banner in ('# -- Constants', '# Part 2'))
    assert abs(int(said) - (end - start - solved_lines())) <= 10, end - start


def solved_lines() -> int:
    """The lines the exercises' solutions found in the module add to it: docs/code.md counts Part 1
    as shipped, and a student's solved exercise leaves this test green."""
    added = 0
    for patch in (Path(stub.__file__).parent / 'tests' / 'exercises' / 'solutions').glob('*.patch'):
        text = patch.read_text(encoding='utf-8')
        module = text.split('+++ b/petstore_stub.py')[1].split('\ndiff ')[0]
        plus = [line[1:] for line in module.splitlines() if line.startswith('+')]
        if all(line in SOURCE for line in plus):
            added += len(plus) - sum(line.startswith('-') for line in module.splitlines())
    return added
