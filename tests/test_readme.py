"""The README and the pages of docs/ cannot rot: every curl command they show is run against a
live stub, their examples are test files or parts of them, the scripts they show run as written,
and every link they hold leads somewhere."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import petstore_stub as stub

ROOT = Path(__file__).resolve().parent.parent
PAGES = {path: path.read_text(encoding='utf-8')
         for path in [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]}
README = PAGES[ROOT / 'README.md']
DOCUMENTATION = '\n'.join(PAGES.values())  #: the README and every page of docs/


def fenced_blocks(language: str) -> list[str]:
    return re.findall(rf'^```{language}\n(.*?)^```$', DOCUMENTATION,
                      flags=re.DOTALL | re.MULTILINE)


def page_fences(name: str, language: str) -> list[str]:
    """The blocks fenced as ``language`` in docs/``name``, in order."""
    return re.findall(rf'^```{language}\n(.*?)^```$', PAGES[ROOT / 'docs' / name],
                      flags=re.DOTALL | re.MULTILINE)


def table_rows(name: str, first_heading: str) -> list[list[str]]:
    """The rows of the table in docs/``name`` whose first column is headed ``first_heading``,
    each a list of its cells."""
    lines = PAGES[ROOT / 'docs' / name].splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f'| {first_heading} |')))
    headings = lines[start].strip('|').split(' | ')
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith('|'):
            break
        cells = [cell.strip() for cell in line.strip().strip('|').split(' | ')]
        assert len(cells) == len(headings), line
        rows.append(cells)
    return rows


def console_examples() -> list[tuple[str, str]]:
    """Each ``$ command`` of the console blocks, with the output printed under it."""
    examples = []
    for block in fenced_blocks('console'):
        for chunk in re.split(r'^\$ ', block, flags=re.MULTILINE)[1:]:
            command, _, output = chunk.partition('\n')
            examples.append((command, output))
    return examples


def without_dates(text: str) -> str:
    return re.sub(r'^Date: .*$', 'Date: (varies)', text.replace('\r\n', '\n'), flags=re.MULTILINE)


@pytest.mark.slow  # a curl process for each example
@pytest.mark.skipif(shutil.which('curl') is None, reason='the tour is written for curl')
def test_the_curl_tour_prints_what_the_readme_shows():
    examples = console_examples()
    assert len(examples) >= 11
    with stub.serve(fixtures=True) as server:
        address = f'127.0.0.1:{server.port}'
        for command, expected in examples:
            assert command.startswith('curl ')
            result = subprocess.run(command.replace('127.0.0.1:8080', address), shell=True,
                                    capture_output=True, text=True, timeout=30)
            printed = result.stdout if result.stdout.endswith('\n') else result.stdout + '\n'
            printed = without_operations_added(printed, expected)
            assert without_dates(printed) == without_dates(
                expected.replace('127.0.0.1:8080', address)), command


def without_operations_added(printed: str, expected: str) -> str:
    """The index as printed, less the operations that the document describes and the README does
    not show: those an exercise adds. Every other output as it is."""
    try:
        shown, index = json.loads(expected)['operations'], json.loads(printed)
    except (ValueError, KeyError, TypeError):  # not the index
        return printed
    described = {operation['operationId'] for _, _, operation in stub.described_operations()}
    index['operations'] = {name: text for name, text in index['operations'].items()
                           if name in shown or name not in described}
    return stub.to_json(index)


EXAMPLES = ['test_example_client.py', 'test_example_app.py', 'example_node.mjs']


def test_each_python_example_in_the_readme_is_part_of_an_example_test_file():
    examples = [(ROOT / 'tests' / name).read_text(encoding='utf-8') for name in EXAMPLES
                if name.endswith('.py')]
    blocks = fenced_blocks('python')
    assert blocks
    for block in blocks:
        assert any(block in example for example in examples), block


@pytest.mark.parametrize('name', EXAMPLES)
def test_the_documentation_links_each_example_file(name):
    assert f'](tests/{name})' in README or f'](../tests/{name})' in DOCUMENTATION
    assert (ROOT / 'tests' / name).is_file()


def anchors(text: str) -> set[str]:
    """The anchors GitHub makes of a page's headings."""
    return {re.sub(r'[^a-z0-9 _-]', '', heading.lower()).replace(' ', '-')
            for heading in re.findall(r'^#{1,6} (.*)$', text, flags=re.MULTILINE)}


@pytest.mark.parametrize('page', PAGES, ids=lambda path: path.name)
def test_every_link_of_a_page_leads_to_a_file_and_a_heading_that_exist(page):
    without_code = re.sub(r'^```.*?^```$', '', PAGES[page], flags=re.DOTALL | re.MULTILINE)
    for target in re.findall(r'\]\(([^)\s]+)\)', without_code):
        if target.startswith(('http://', 'https://')):
            continue
        path, _, anchor = target.partition('#')
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f'{page.name}: {target}'
        if anchor:
            assert anchor in anchors(linked.read_text(encoding='utf-8')), f'{page.name}: {target}'


def test_the_readme_is_a_front_door_and_each_page_is_linked_from_it():
    assert README.count('\n') <= 200
    for page in PAGES:
        if page.parent.name == 'docs':
            assert f'](docs/{page.name})' in README, page.name


def test_the_documentation_names_every_flag_of_the_cli():
    for action in stub.build_parser()._actions:
        for flag in action.option_strings:
            if flag.startswith('--') and flag not in ('--help', '--version'):
                assert f'`{flag}' in DOCUMENTATION, flag


def test_the_documentation_lists_every_error_code():
    source = (ROOT / 'petstore_stub.py').read_text(encoding='utf-8')
    codes = set(re.findall(r"ApiError\(\d{3}, '([a-z_]+)'", source))
    codes |= {'not_found', 'method_not_allowed', 'internal_error'}
    for code in codes:
        assert f'`{code}`' in DOCUMENTATION, code


@pytest.mark.slow
def test_the_benchmark_runs_in_quick_mode():
    result = subprocess.run([sys.executable, str(ROOT / 'tests' / 'bench.py'), '--quick'],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for figure in ('ratio', 'cold start to first 200', 'idle RSS', 'RSS after load',
                   'pets:', 'reset plus one request'):
        assert figure in result.stdout
    assert 'FAILURES' not in result.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('wrk') is None, reason='the HTTPS figures need wrk')
def test_the_https_benchmark_runs_in_quick_mode():
    result = subprocess.run([sys.executable, str(ROOT / 'tests' / 'bench.py'), '--tls', '--quick'],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert re.search(r'^get +16 +\d+ +\d+ +[\d.]+x', result.stdout, re.MULTILINE), result.stdout
    assert 'FAILURES' not in result.stdout


def test_ci_runs_exactly_the_readme_test_command():
    commands = [line for block in re.findall(r'^```sh\n(.*?)^```$', README,
                                             flags=re.DOTALL | re.MULTILINE)
                for line in block.splitlines() if line.startswith('python3 -m venv')]
    test_command = next(line for line in commands if 'pytest' in line)
    assert test_command in (ROOT / '.ci' / 'run').read_text(encoding='utf-8').splitlines()


def test_the_procfile_line_starts_the_stub_with_flags_it_has():
    (block,) = fenced_blocks('procfile')
    process, _, command = block.strip().partition(': ')
    program, *arguments = command.split()
    assert (process, program) == ('web', 'petstore-stub')
    assert 'petstore-stub = "petstore_stub:main"' in (ROOT / 'pyproject.toml').read_text()
    settings = stub.build_parser().parse_args(arguments)
    assert (settings.host, settings.fixtures) == ('0.0.0.0', '')
    help_text = stub.build_parser().format_help()
    assert all(argument in help_text for argument in arguments if argument.startswith('--'))


def run_script(starting: str, folder: Path) -> subprocess.CompletedProcess:
    """The shell script shown that runs ``starting``, run in ``folder`` with this stub."""
    (script,) = [block for block in fenced_blocks('sh') if starting in block]
    script = script.replace('petstore-stub ', f'{sys.executable} {ROOT / "petstore_stub.py"} ', 1)
    return subprocess.run(['bash', '-c', script], cwd=folder, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.slow  # bash, curl and a stub process
@pytest.mark.skipif(shutil.which('curl') is None, reason='the script is written for curl')
def test_the_script_for_another_language_runs_as_written(tmp_path):
    result = run_script('petstore-stub --admin', tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '[]\n'  # no client ran, so the journal is empty
    assert list(tmp_path.iterdir()) == []  # the stub stopped cleanly and removed its ready file


@pytest.mark.slow  # bash, curl, Node and a stub process
@pytest.mark.skipif(shutil.which('curl') is None or shutil.which('node') is None,
                    reason='the script is written for curl and Node')
def test_the_https_script_trusts_the_ca_from_curl_and_node_as_written(tmp_path):
    result = run_script('petstore-stub --tls', tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ('{"id": 1, "name": "Rex", "categoryId": 1, "status": "available"}\n'
                             '200 Rex\n')
    assert list(tmp_path.iterdir()) == []  # the ready file removed at the clean stop


@pytest.mark.slow  # a bash process
@pytest.mark.parametrize('start', ['false', 'no-such-command'])
def test_the_script_for_another_language_stops_when_the_stub_does_not_start(tmp_path, start):
    (script,) = [block for block in fenced_blocks('sh') if 'petstore-stub --admin' in block]
    (tmp_path / 'stub.json').write_text('{"url": "http://127.0.0.1:9/v1"}')  # a stale one
    result = subprocess.run(['bash', '-c', script.replace('petstore-stub ', f'{start} ', 1)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert result.stdout == ''


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('node') is None, reason='the example is written for Node')
def test_the_node_example_runs_as_written(tmp_path):
    script = (ROOT / 'tests' / 'example_node.mjs').read_text(encoding='utf-8')
    assert "spawn('petstore-stub', [" in script
    script = script.replace("spawn('petstore-stub', [",
                            f'spawn({json.dumps(sys.executable)}, [{json.dumps(str(stub.__file__))}, ')
    result = subprocess.run(['node', '--input-type=module', '-e', script], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '200 { matched: 1 }\n'
    assert list(tmp_path.iterdir()) == []  # the stub removed its ready file as it stopped


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('node') is None, reason='the example is written for Node')
def test_the_node_example_without_the_stub_on_path_says_so_in_one_line(tmp_path):
    node = shutil.which('node')
    result = subprocess.run([node, str(ROOT / 'tests' / 'example_node.mjs')], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, 'PATH': str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr == ('example_node: cannot run petstore-stub (ENOENT); '
                             "put the venv's bin on PATH\n")
