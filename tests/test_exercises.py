"""The exercises in tests/exercises: skipped by the suite, failing with a student's words until
solved, and each reference solution a change to Part 1 alone that turns its exercise green. These
tests hold the stub as shipped: with an exercise solved, leave this file out (see docs/code.md)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MODULE, NOT_ALLOWED

ROOT = MODULE.parent
SOLUTIONS = ROOT / 'tests' / 'exercises' / 'solutions'
#: In the order a student takes them, and their patches apply.
EXERCISES = ['delete', 'put', 'cursor']
PART_2 = '# Part 2: the machinery.'
#: What a solution may change: Part 1 of the module, the document, the exercises' own files.
MAY_CHANGE = ('petstore_stub.py', 'data/openapi.json', 'tests/exercises/')


def project_copy(into: Path) -> Path:
    """The project as its source distribution holds it, in a new folder."""
    into.mkdir()
    for name in ('petstore_stub.py', 'data', 'tests', 'README.md', 'docs', 'LICENSE',
                 'CHANGELOG.md', 'pyproject.toml'):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, into / name)
    (into / '.ci').mkdir()
    shutil.copy(ROOT / '.ci' / 'run', into / '.ci' / 'run')
    (into / '.ci' / 'node').symlink_to(ROOT / '.ci' / 'node')  # the tools .ci/run installed here
    return into


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """pytest run in ``folder``, on its copy of the module, in one process, its asserts not
    rewritten: what a test of the copy says when it fails is in the output all the same."""
    return subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
                           '-n', '0', '--assert=plain', *args], cwd=folder,
                          env={**os.environ, 'PYTHONPATH': str(folder)},
                          capture_output=True, text=True, timeout=300)


def changed_files(patch: str) -> list[str]:
    return [line.split(' b/', 1)[1] for line in patch.splitlines() if line.startswith('diff --git')]


def test_every_exercise_has_a_solution():
    assert sorted(path.stem for path in SOLUTIONS.glob('*.patch')) == sorted(EXERCISES)
    assert sorted(path.stem.removeprefix('test_')
                  for path in SOLUTIONS.parent.glob('test_*.py')) == sorted(EXERCISES)


def test_the_shipped_stub_refuses_what_the_exercises_add(client):
    assert ('DELETE', '/v1/pets/1') in NOT_ALLOWED and ('PUT', '/v1/pets/1') in NOT_ALLOWED
    assert client.delete('/v1/pets/1', status=405).json['code'] == 'method_not_allowed'
    assert client.get('/v1/pets?after=1', status=400).json['code'] == 'invalid_parameter'


@pytest.mark.slow
@pytest.mark.parametrize('name', EXERCISES)
def test_a_solution_changes_part_1_alone_and_turns_its_exercise_from_red_to_green(tmp_path, name):
    copy = project_copy(tmp_path / 'project')
    unsolved = pytest_in(copy, 'tests/exercises', '--exercise', name)
    assert unsolved.returncode == 1, unsolved.stdout
    assert 'passed' not in unsolved.stdout.splitlines()[-1]  # every test fails until it is solved
    assert 'Traceback' not in unsolved.stdout and 'def test_' not in unsolved.stdout  # words only

    patch = (SOLUTIONS / f'{name}.patch').read_text()
    assert all(path.startswith(MAY_CHANGE) for path in changed_files(patch)), changed_files(patch)
    subprocess.run(['git', 'apply', str(SOLUTIONS / f'{name}.patch')], cwd=copy, check=True)
    shipped, solved = (MODULE.read_text(), (copy / 'petstore_stub.py').read_text())
    assert solved.split(PART_2)[1] == shipped.split(PART_2)[1], 'the solution changed Part 2'
    assert solved.split(PART_2)[0] != shipped.split(PART_2)[0]

    solved_run = pytest_in(copy, 'tests/exercises', '--exercise', name)
    assert solved_run.returncode == 0, solved_run.stdout


#: The tests that read the API's operations, their responses or the store's methods: with every
#: exercise solved they take the new operations from the document, as the rest of the suite does.
READ_OPERATIONS = [
    'tests/test_readme.py::test_the_curl_tour_prints_what_the_readme_shows',
    'tests/test_node.py::test_the_node_suite_drives_every_admin_endpoint_and_meets_each_'
    'fault[http]',
    'tests/test_cli.py::test_a_stderr_nobody_reads_costs_no_request_and_lets_the_stub_stop',
    'tests/test_plugin.py::test_the_summary_says_what_the_tests_never_met_summed_over_the_workers'
    '[one process]',
    'tests/test_openapi.py::test_openapi_operations_are_exactly_the_served_routes',
    'tests/test_openapi.py::test_every_answer_with_pets_is_what_the_document_describes',
    'tests/test_page.py', 'tests/test_routes.py',
    'tests/test_layout.py::test_each_copy_of_the_pet_statuses_lists_pet_statuses_in_order',
    'tests/test_docs.py']


@pytest.mark.slow
def test_the_tests_that_read_the_operations_pass_with_every_solution_applied(tmp_path):
    copy = project_copy(tmp_path / 'project')
    for name in EXERCISES:
        subprocess.run(['git', 'apply', str(SOLUTIONS / f'{name}.patch')], cwd=copy, check=True)
    run = pytest_in(copy, *READ_OPERATIONS)
    assert run.returncode == 0, run.stdout[-3000:]
    assert ' passed' in run.stdout.splitlines()[-1]


def test_the_documentation_gives_the_command_that_runs_an_exercise():
    readme = (ROOT / 'docs' / 'code.md').read_text(encoding='utf-8')
    assert '.venv/bin/python -m pytest tests/exercises --exercise delete' in readme
    assert '.venv/bin/python -m pytest --ignore tests/test_exercises.py' in readme
    assert all(f'`{name}`' in readme for name in EXERCISES)
