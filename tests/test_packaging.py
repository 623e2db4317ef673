"""The sdist and the wheel, built here without the network, and the data the wheel installs."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import petstore_stub as stub
from test_readme import page_fences

ROOT = Path(__file__).resolve().parent.parent
#: The files of data/ the stub reads at run time: each file of data/ the module names.
READ_AT_RUN_TIME = {name for name in re.findall(r"'([\w-]+\.\w+)'",
                                                (ROOT / 'petstore_stub.py').read_text('utf-8'))
                    if (ROOT / 'data' / name).is_file()}
RELEASE = f'petstore_stub-{stub.__version__}'


@pytest.fixture(scope='module')
def built(tmp_path_factory) -> tuple[set[str], set[str]]:
    """The names in the sdist and in the wheel, as ``python -m build`` makes them (the wheel
    from the sdist), with the hatchling installed here."""
    out = tmp_path_factory.mktemp('dist')
    subprocess.run([sys.executable, '-m', 'build', '--no-isolation', '--outdir', str(out),
                    str(ROOT)], check=True, capture_output=True, timeout=300)
    with tarfile.open(out / f'{RELEASE}.tar.gz') as sdist:
        sdist_names = set(sdist.getnames())
    with zipfile.ZipFile(out / f'{RELEASE}-py3-none-any.whl') as wheel:
        wheel_names = set(wheel.namelist())
    return sdist_names, wheel_names


@pytest.mark.slow
def test_the_wheel_holds_the_module_and_under_share_the_data_it_reads(built):
    _, wheel = built
    assert READ_AT_RUN_TIME >= {'index.html', 'openapi.json', 'admin-openapi.json', 'pets.json'}
    assert {name.split('/')[0] for name in wheel} == {
        'petstore_stub.py', f'{RELEASE}.dist-info', f'{RELEASE}.data'}
    assert {name for name in wheel if name.startswith(f'{RELEASE}.data/')} == {
        f'{RELEASE}.data/data/share/petstore-stub/{name}' for name in READ_AT_RUN_TIME}


@pytest.mark.slow
def test_the_sdist_holds_what_its_tests_need(built):
    sdist, _ = built
    for name in ('pyproject.toml', 'README.md', 'docs/testing.md', 'CHANGELOG.md', 'LICENSE',
                 'petstore_stub.py', '.ci/run',
                 'tests/conftest.py', 'data/screenshot.jpg',
                 *(f'data/{name}' for name in READ_AT_RUN_TIME)):
        assert f'{RELEASE}/{name}' in sdist, name
    assert not any('/.venv/' in name or '__pycache__' in name for name in sdist)


@pytest.mark.parametrize('site_packages', [
    pytest.param('lib/python3.11/site-packages', id='posix'),
    pytest.param('Lib/site-packages', id='windows'),
])
def test_an_installed_module_finds_its_data_under_its_prefix(tmp_path, monkeypatch,
                                                              site_packages):
    (tmp_path / site_packages).mkdir(parents=True)
    shared = tmp_path / 'share' / 'petstore-stub'
    shared.mkdir(parents=True)
    (shared / 'pets.json').write_text('[]')
    monkeypatch.setattr(stub, '__file__', str(tmp_path / site_packages / 'petstore_stub.py'))
    assert stub.data_path('pets.json') == shared / 'pets.json'
    with pytest.raises(FileNotFoundError, match='index.html is in none of'):
        stub.data_path('index.html')


#: A user's test, typed, with one mistake: add_pet() returns a dict.
TYPED_USE = '''
import petstore_stub


def test_a_pet(petstore_server: petstore_stub.StubServer) -> None:
    count: int = petstore_server.add_pet('Rex', 1)
    assert count
'''


@pytest.mark.slow
def test_a_users_mypy_reads_the_test_api_once_told_to_follow_the_single_module(tmp_path):
    (tmp_path / 'test_typed.py').write_text(TYPED_USE)

    def mypy() -> str:
        run = subprocess.run([sys.executable, '-m', 'mypy', '--cache-dir', str(tmp_path / 'cache'),
                              'test_typed.py'], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
        return run.stdout
    assert '[import-untyped]' in mypy()  # one module: no py.typed can say it is typed
    (tmp_path / 'pyproject.toml').write_text(page_fences('testing.md', 'toml')[0])
    assert 'Incompatible types in assignment (expression has type "dict[Any, Any]", variable has '\
           'type "int")' in mypy()
