"""The pytest plugin, as another project meets it: installed, no conftest, also under xdist."""

import re
import subprocess
import sys

import pytest

from conftest import DOCUMENTED, never_met
from test_readme import page_fences

pytest_plugins = ['pytester']

ANOTHER_PROJECTS_TESTS = '''
import json
import urllib.request

import pytest

import petstore_stub as stub

import petstore_stub


def get(server, path):
    request = urllib.request.Request(server.url + path, headers=server.headers)
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


@pytest.mark.parametrize('name', ['Rex', 'Bella', 'Max', 'Luna'])
def test_each_test_starts_empty(petstore_server, name):
    assert get(petstore_server, '/pets') == []
    assert petstore_server.requests[-1]['path'] == '/v1/pets'
    assert petstore_server.add_pet(name, 1)['id'] == 1


def test_the_in_process_app(petstore_app):
    petstore_app.post_json('/v1/pets', {'name': 'Kiwi', 'categoryId': 3}, status=201)
    assert petstore_app.get('/v1/pets/1').json['name'] == 'Kiwi'


def test_serve_directly():
    with petstore_stub.serve(staging=True) as server:
        assert server.url.endswith('/staging/v1')
        assert get(server, '/pets') == []


class TestWithTheDemoAnimals:
    @pytest.fixture
    def petstore_fixtures(self):
        return True

    def test_they_are_loaded(self, petstore_server):
        assert len(get(petstore_server, '/pets?limit=100')) == 13

    def test_and_in_process(self, petstore_app):
        assert len(petstore_app.get('/v1/pets?limit=100').json) == 13
'''

OVERRIDDEN_KEY = '''
import pytest

import petstore_stub as stub


@pytest.fixture(scope='session')
def petstore_api_key():
    return 'project-key'


def test_the_overridden_key_is_used(petstore_server, petstore_app):
    assert petstore_server.headers == {'Authorization': 'Bearer project-key'}
    petstore_app.get('/v1/pets', status=200)
    petstore_app.get('/v1/pets', headers={'Authorization': 'Bearer petstore-demo-key'}, status=401)
'''


@pytest.mark.slow
def test_another_projects_tests_pass_with_no_conftest(pytester):
    pytester.makepyfile(test_client=ANOTHER_PROJECTS_TESTS)
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=8)


@pytest.mark.slow
def test_another_projects_tests_pass_under_xdist_sharing_nothing_on_disk(pytester):
    pytester.makepyfile(test_client=ANOTHER_PROJECTS_TESTS)
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider', '-n', '2')
    result.assert_outcomes(passed=8)
    assert list(pytester.path.rglob('*.json')) == []


@pytest.mark.slow
def test_a_conftest_can_override_the_key(pytester):
    pytester.makeconftest(OVERRIDDEN_KEY.split('def test_')[0])
    pytester.makepyfile(test_key='def test_' + OVERRIDDEN_KEY.split('def test_')[1])
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_a_failure_inside_the_server_fails_the_test(pytester):
    pytester.makepyfile(test_broken='''
import urllib.error, urllib.request
import petstore_stub as stub

def test_a_bug_in_the_stub(petstore_server, monkeypatch):
    monkeypatch.setattr(stub, 'parse_limit', lambda *a, **k: 1 / 0)
    request = urllib.request.Request(petstore_server.url + '/pets', headers=petstore_server.headers)
    try:
        urllib.request.urlopen(request, timeout=5)
    except urllib.error.HTTPError as error:
        error.close()
''')
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(['*ServerError: the stub server failed: ZeroDivisionError*'])


UNUSED_FAULT = """
import pytest

import petstore_stub as stub

def test_it(petstore_server):
    petstore_server.fail_next(503, times=2, route='createPet', after=1)
"""


@pytest.mark.slow
def test_a_fault_the_test_never_uses_fails_it_at_teardown(pytester):
    pytester.makepyfile(test_unused_faults=UNUSED_FAULT)
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        '*in this test, 1 queued fault was not used up:',
        '*  503 for createPet: times 2 of 2 left, after 1 of 1 left',
        '*mark it @pytest.mark.petstore_allows_unused_faults, or set the ini option '
        'petstore_fail_on_unused_faults = false)*'])
    assert 'During handling of the above exception' not in result.stdout.str()  # said once


@pytest.mark.slow
@pytest.mark.parametrize('source, ini', [
    pytest.param(UNUSED_FAULT.replace('def ', '@pytest.mark.petstore_allows_unused_faults\ndef '),
                 None, id='marker'),
    pytest.param(UNUSED_FAULT, '[pytest]\npetstore_fail_on_unused_faults = false\n', id='ini'),
])
def test_a_fault_the_test_never_uses_passes_when_allowed(pytester, source, ini):
    pytester.makepyfile(test_unused_faults=source)
    if ini:
        pytester.makeini(ini)
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=1)


FIRST_ID_TESTS = """
def test_over_http(petstore_server):
    assert petstore_server.add_pet('Rex', 1)['id'] == 2 ** 53 + 1


def test_in_process(petstore_app):
    pet = petstore_app.post_json('/v1/pets', {'name': 'Kiwi', 'categoryId': 3}, status=201).json
    assert pet['id'] == 2 ** 53 + 1
"""


@pytest.mark.slow
def test_the_ini_option_petstore_first_id_gives_both_fixtures_ids_from_it(pytester):
    pytester.makeini(f'[pytest]\npetstore_first_id = {2 ** 53 + 1}\n')
    pytester.makepyfile(test_ids=FIRST_ID_TESTS)
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=2)


@pytest.mark.slow
@pytest.mark.parametrize('ini, message', [
    ('petstore_first_id = 0', 'petstore_first_id: a first id is a whole number from 1 to '
                              "9223372036854775807; got '0'"),
    ("petstore_first_id = 7'", 'petstore_first_id: No closing quotation'),
    ('petstore_fail_on_unmatched_requests = maybe', 'petstore_fail_on_unmatched_requests: give '
                                                    "true or false (invalid truth value 'maybe')"),
    ('petstore_tls = sometimes', "petstore_tls: give true or false (invalid truth value "
                                 "'sometimes')")])
def test_an_ini_option_out_of_range_stops_the_run_before_any_test(pytester, ini, message):
    pytester.makeini(f'[pytest]\n{ini}\n')
    pytester.makepyfile(test_ids=FIRST_ID_TESTS)
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines == [f'ERROR: {message}', '']


@pytest.mark.slow  # a Python process of its own, which has not imported pytest
def test_serving_never_imports_pytest():
    code = 'import sys, petstore_stub; print("pytest" in sys.modules)'
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            check=True)
    assert result.stdout == 'False\n'


@pytest.mark.slow
def test_petstore_app_without_webtest_names_the_install_command(pytester):
    pytester.makeconftest('import sys\nsys.modules["webtest"] = None  # as if not installed\n')
    pytester.makepyfile(test_app='def test_it(petstore_app):\n    pass\n')
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(  # [[] is a literal [ to fnmatch
        ["*the petstore_app fixture needs WebTest: pip install 'petstore-stub[[]pytest]'*"])
    assert 'ModuleNotFoundError' not in result.stdout.str()


#: What THREE_TESTS meet of the documented responses (listPets 200 and createPet 201), a percent.
DOCUMENTED_RESPONSES = sum(map(len, DOCUMENTED.values()))
MET_SHARE = 100 * 2 / DOCUMENTED_RESPONSES
THREE_TESTS = '''
import json
import urllib.error
import urllib.request


def call(server, method, path, body=None):
    request = urllib.request.Request(server.url + path, method=method, headers={
        **server.headers, 'Content-Type': 'application/json'},
        data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_list(petstore_server):
    assert call(petstore_server, 'GET', '/pets') == 200


def test_a_create(petstore_server):
    assert call(petstore_server, 'POST', '/pets', {'name': 'Rex', 'categoryId': 1}) == 201


def test_a_503(petstore_server):
    petstore_server.fail_next(503, route='createPet')
    assert call(petstore_server, 'POST', '/pets', {'name': 'Rex', 'categoryId': 1}) == 503
'''


@pytest.mark.slow
@pytest.mark.parametrize('workers, runs', [
    pytest.param([], 1, id='one process'),
    pytest.param(['-n', '2', '--dist', 'each'], 2, id='each test on two xdist workers')])
def test_the_summary_says_what_the_tests_never_met_summed_over_the_workers(pytester, workers,
                                                                          runs):
    pytester.makepyfile(test_three=THREE_TESTS)
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider', *workers)
    result.assert_outcomes(passed=3 * runs)
    expected = [
        '*petstore-stub: what the tests met of the API*',
        f'documented responses met: 2 of {DOCUMENTED_RESPONSES} ({MET_SHARE:.0f}%)',
        *[f'  never met: {operation} {", ".join(statuses)}'
          for operation, statuses in never_met('listPets 200', 'createPet 201').items()],
        f'faults met: 503 (x{runs})',
    ]
    result.stdout.fnmatch_lines(expected)


@pytest.mark.slow
def test_the_summary_counts_what_the_in_process_app_met(pytester):
    pytester.makepyfile(test_both='''
def test_a_list_in_process(petstore_app):
    petstore_app.get('/v1/pets', status=200)


def test_a_get_in_process(petstore_app):
    petstore_app.get('/v1/pets/1', status=404)
''')
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f'documented responses met: 2 of {DOCUMENTED_RESPONSES} *',
                                 'deprecated: getPet called once.*'])
    assert 'never met: getPet 200, 400, 401, 500' in result.stdout.str()  # its 404 met


@pytest.mark.slow
def test_the_coverage_summary_docs_testing_shows_is_what_its_three_tests_print(pytester):
    """The example counts the shipped API's responses: an operation added (as each exercise
    adds one) changes what the summary says, and this test names docs/testing.md to update."""
    pytester.makepyfile(test_three=THREE_TESTS)
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=3)
    (shown,) = [block for block in page_fences('testing.md', 'text') if 'never met' in block]
    title, *lines = shown.splitlines()
    result.stdout.fnmatch_lines([f'*{title.strip("= ")}*'])
    printed = result.stdout.lines
    named = {line.split()[2] for line in lines if 'never met:' in line}
    if added := set(DOCUMENTED) - named:  # a solved exercise's operation: its line, its count
        lines = [re.sub(r'met: 2 of .*', 'met: 2 of *', line) for line in lines]
        printed = [line for line in printed
                   if not ('never met:' in line and line.split()[2] in added)]
    pytest.LineMatcher(printed).fnmatch_lines(lines, consecutive=True)


@pytest.mark.slow
@pytest.mark.parametrize('least, outcome', [(f'{MET_SHARE - 1:g}', 0), (f'{MET_SHARE + 1:g}', 1)])
def test_petstore_coverage_fail_under_fails_a_session_that_met_less(pytester, least, outcome):
    pytester.makepyfile(test_three=THREE_TESTS)
    pytester.makeini(f'[pytest]\npetstore_coverage_fail_under = {least}\n')
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=3)
    assert result.ret == outcome
    failed = (f'FAILED: {MET_SHARE:.0f}% of the documented responses met, under '
              f'petstore_coverage_fail_under = {least}')
    assert (failed in result.stdout.str()) == bool(outcome)


@pytest.mark.slow
def test_the_coverage_summary_can_be_turned_off_and_a_failure_under_the_share_still_says_why(
        pytester):
    pytester.makepyfile(test_three=THREE_TESTS)
    pytester.makeini('[pytest]\npetstore_coverage = false\n')
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=3)
    assert 'what the tests met of the API' not in result.stdout.str() and result.ret == 0
    pytester.makeini('[pytest]\npetstore_coverage = false\npetstore_coverage_fail_under = 50%\n')
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    assert result.ret == 1
    assert (f'FAILED: {MET_SHARE:.0f}% of the documented responses met, under '
            'petstore_coverage_fail_under = 50') in result.stdout.str()
    assert 'what the tests met of the API' not in result.stdout.str()


@pytest.mark.slow
@pytest.mark.parametrize('least', ['abc', '150', '-5'])
def test_a_fail_under_that_is_no_percent_stops_the_run_before_it_starts(pytester, least):
    pytester.makepyfile(test_three=THREE_TESTS)
    pytester.makeini(f'[pytest]\npetstore_coverage_fail_under = {least}\n')
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"petstore_coverage_fail_under: give a percent from 0 to 100; got '{least}'" in (
        result.stderr.str())
    assert 'passed' not in result.stdout.str()


CLIENT_BUGS = '''
import json
import urllib.error
import urllib.request

import pytest

import petstore_stub as stub


def call(server, path):
    request = urllib.request.Request(server.url + path, headers=server.headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        return error.code


@MARK
def test_a_typo(petstore_server):
    assert call(petstore_server, '/pest') == 404


def test_a_pet_that_is_not_there(petstore_server):  # answered by getPet: not unmatched
    petstore_server.add_pet('Rex', 1)
    assert call(petstore_server, '/pets/2') == 404
'''
CLIENT_BUGS_INI = '[pytest]\n'


@pytest.mark.slow
@pytest.mark.parametrize('workers, runs', [
    pytest.param([], 1, id='one process'),
    pytest.param(['-n', '2', '--dist', 'each'], 2, id='each test on two xdist workers')])
def test_the_summary_names_the_requests_no_operation_answered(pytester, workers, runs):
    pytester.makeini(CLIENT_BUGS_INI)
    pytester.makepyfile(test_bugs=CLIENT_BUGS.replace('@MARK\n', ''))
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider', *workers)
    result.assert_outcomes(passed=2 * runs)
    result.stdout.fnmatch_lines([f'requests no operation answered ({runs}):',
                                 '  GET /v1/pest -> 404 not_found'])
    assert 'GET /v1/pets/2' not in result.stdout.str()


@pytest.mark.slow
@pytest.mark.parametrize('mark, outcomes', [('', {'passed': 2, 'errors': 1}),
                                            ('@pytest.mark.petstore_allows_unmatched_requests',
                                             {'passed': 2})])
def test_the_unmatched_guard_fails_a_test_whose_client_sent_a_request_nothing_answered(
        pytester, mark, outcomes):
    pytester.makeini(CLIENT_BUGS_INI + 'petstore_fail_on_unmatched_requests = true\n')
    pytester.makepyfile(test_bugs=CLIENT_BUGS.replace('@MARK', mark))
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(**outcomes)
    guarded = ('the code under test sent 1 request(s) that no operation answered:\n'
               '  GET /v1/pest -> 404 not_found: ')
    assert (guarded in result.stdout.str()) == (not mark)


@pytest.mark.slow
def test_a_toml_list_of_two_first_ids_is_refused(pytester):
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\npetstore_first_id = [1, 2]\n'
                               'filterwarnings = ["error"]\n')
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[-2] == ('ERROR: petstore_first_id: a first id is a whole number '
                                       "from 1 to 9223372036854775807; got '1 2'")
    assert 'Traceback' not in result.stderr.str() + result.stdout.str()
