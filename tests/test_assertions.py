"""assert_called and assert_not_called, their messages pinned as text; and the guard that
fails a test whose client swallowed a malformed request."""

import re
from pathlib import Path

import pytest
import webtest

import petstore_stub as stub
from conftest import AUTH

pytest_plugins = ['pytester']


@pytest.fixture
def app():
    app = stub.create_stub()
    client = webtest.TestApp(app)
    client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': '3'}, headers=AUTH, status=400)
    client.post_json('/v1/pets', {'name': 'Bella', 'categoryId': 2, 'status': 'sold'},
                     headers=AUTH, status=201)
    client.get('/v1/pets?limit=5&status=sold', headers={**AUTH, 'X-Trace': 'abc'})
    return app


def failure(call, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


@pytest.mark.parametrize('what, expected', [
    ('createPet', {}),
    ('createPet', {'times': 2}),
    ('createPet', {'json': {'name': 'Bella', 'categoryId': 2, 'status': 'sold'}, 'times': 1}),
    ('POST /pets', {'times': 2}),
    ('POST /v1/pets', {'times': 2}),
    ('listPets', {'query': {'limit': 5, 'status': 'sold'}}),
    ('listPets', {'query': {'limit': '5'}, 'headers': {'x-trace': 'abc'}}),
    ('GET /pets', {'times': 1}),
])
def test_assert_called_passes_when_a_request_matches(app, what, expected):
    app.assert_called(what, **expected)


def test_json_including_matches_a_body_that_holds_at_least_its_fields_nested_ones_too():
    app = stub.create_stub()
    webtest.TestApp(app).post_json('/v1/pets', {'name': 'Kiwi', 'categoryId': 3}, headers=AUTH,
                                   status=201)
    app.assert_called('createPet', json=stub.Including({'name': 'Kiwi'}), times=1)
    assert not app.find_requests('createPet', json={'name': 'Kiwi'})  # json= is the whole body
    assert stub.same_json(stub.Including({'a': {'b': 1}, 'c': [{'d': 2}]}),
                          {'a': {'b': 1, 'x': 0}, 'c': [{'d': 2, 'y': 0}], 'z': 0})
    assert not stub.same_json(stub.Including({'c': [{'d': 2}]}), {'c': [{'d': 2}, {'d': 3}]})
    assert not stub.same_json({'a': {'b': 1}}, {'a': {'b': 1, 'x': 0}})  # exact, nested too


def test_a_partial_match_that_fails_shows_its_differences_and_not_the_fields_it_leaves_out(app):
    assert failure(app.assert_called, 'createPet',
                   json=stub.Including({'name': 'Bella', 'categoryId': 3})) == '''\
createPet was not called with json=Including({'name': 'Bella', 'categoryId': 3}).
Recorded createPet requests (2):
  1. POST /v1/pets -> 400 invalid_body {"name": "Rex", "categoryId": "3"}
  2. POST /v1/pets -> 201 {"name": "Bella", "categoryId": 2, "status": "sold"}
The closest, #2, differs in:
  categoryId: expected 3, sent 2'''


def test_a_query_matches_when_it_holds_at_least_the_parameters_given(app):
    app.assert_called('listPets', query={'status': 'sold'})  # limit=5 was sent too


def test_assert_not_called_passes_when_nothing_matches(app):
    app.assert_not_called('getPet')
    app.assert_not_called('GET /pets/1')


def test_a_body_that_differs_is_shown_field_by_field(app):
    assert failure(app.assert_called, 'createPet', json={'name': 'Rex', 'categoryId': 3}) == '''\
createPet was not called with json={'name': 'Rex', 'categoryId': 3}.
Recorded createPet requests (2):
  1. POST /v1/pets -> 400 invalid_body {"name": "Rex", "categoryId": "3"}
  2. POST /v1/pets -> 201 {"name": "Bella", "categoryId": 2, "status": "sold"}
The closest, #1, differs in:
  categoryId: expected 3, sent '3\''''


class Watched(dict):
    """A filter that counts how many of its items an assertion looks at."""

    looked = 0

    def items(self):
        for item in super().items():
            self.looked += 1
            yield item


def test_a_huge_filter_costs_what_the_journal_holds_not_its_size_and_shows_20_differences(app):
    expected = Watched({f'field{number}': number for number in range(80_000)})
    message = failure(app.assert_called, 'createPet', json=expected)
    # Two createPet entries of 2 and 3 fields: each is looked at for its first 21 differences,
    # and the closest once more to count them all.
    assert expected.looked < 2 * (3 + 21) + 80_003
    # The closest, #1 (name and categoryId, neither expected), differs in 80,002 fields.
    assert message.count(', missing') == 20
    assert message.endswith("  field19: expected 19, missing\n  ... and 79982 more")


class WatchedList(list):
    """A list of expected query values that counts how often it is gone through."""

    walks = 0

    def __iter__(self):
        self.walks += 1
        return super().__iter__()


def test_a_long_list_of_expected_query_values_is_read_once_not_once_a_call(app):
    client = webtest.TestApp(app)
    for _ in range(3):
        client.get('/v1/pets?status=sold&status=pending', headers=AUTH, status=400)
    values = WatchedList(['sold'] * 100_000)
    failure(app.assert_called, 'listPets', query={'status': values})
    assert values.walks == 1


def test_missing_and_unexpected_fields_are_named(app):
    message = failure(app.assert_called, 'createPet',
                      json={'name': 'Bella', 'categoryId': 2, 'owner': 'Ann'})
    assert message.endswith('''\
The closest, #2, differs in:
  owner: expected 'Ann', missing
  status: not expected, sent 'sold\'''')


def test_a_count_that_differs_says_how_many_matched(app):
    assert failure(app.assert_called, 'createPet', times=1) == '''\
createPet was called twice; expected once.
Recorded createPet requests (2):
  1. POST /v1/pets -> 400 invalid_body {"name": "Rex", "categoryId": "3"}
  2. POST /v1/pets -> 201 {"name": "Bella", "categoryId": 2, "status": "sold"}'''


def test_a_query_and_a_header_that_differ_are_shown(app):
    assert failure(app.assert_called, 'listPets', query={'limit': 50},
                   headers={'X-Trace': 'xyz', 'X-Other': '1'}) == '''\
listPets was not called with query={'limit': 50}, headers={'X-Trace': 'xyz', 'X-Other': '1'}.
Recorded listPets requests (1):
  1. GET /v1/pets?limit=5&status=sold -> 200
The closest, #1, differs in:
  query limit: expected '50', sent '5'
  header X-Trace: expected 'xyz', sent 'abc'
  header X-Other: expected '1', missing'''


def test_an_operation_never_called_lists_what_was(app):
    assert failure(app.assert_called, 'getPet') == '''\
getPet was not called.
No getPet request was recorded; the journal holds:
  1. POST /v1/pets -> 400 invalid_body {"name": "Rex", "categoryId": "3"}
  2. POST /v1/pets -> 201 {"name": "Bella", "categoryId": 2, "status": "sold"}
  3. GET /v1/pets?limit=5&status=sold -> 200'''


def test_assert_not_called_lists_the_calls_as_assert_called_with_times_0_does(app):
    assert failure(app.assert_not_called, 'listPets') == '''\
listPets was called once; expected no times.
Recorded listPets requests (1):
  1. GET /v1/pets?limit=5&status=sold -> 200'''


def test_json_is_compared_as_json_not_as_python():
    app = stub.create_stub()
    webtest.TestApp(app).post('/v1/pets', '{"name": "Rex", "categoryId": 1}', headers=AUTH,
                              content_type='application/json')
    app.assert_called('createPet', json={'name': 'Rex', 'categoryId': 1})
    for wrong in (True, 1.0, '1'):
        assert 'categoryId: expected' in failure(app.assert_called, 'createPet',
                                                  json={'name': 'Rex', 'categoryId': wrong})


@pytest.mark.parametrize('what', ['noSuchOperation', 'pets', 'GET pets'])
def test_what_is_an_operation_or_a_method_and_path(app, what):
    with pytest.raises(ValueError, match="name an operation"):
        app.assert_called(what)


def test_a_query_in_what_is_refused_rather_than_never_matched(app):
    for check in (app.assert_called, app.assert_not_called):
        with pytest.raises(ValueError, match='give the query as query='):
            check('GET /pets?limit=5&status=sold')
    app.assert_called('GET /pets', query={'limit': 5, 'status': 'sold'})


@pytest.mark.parametrize('expected, words', [
    pytest.param({'times': '1'}, 'times is a whole number', id='times as text'),
    pytest.param({'times': -1}, 'times is a whole number', id='negative times'),
    pytest.param({'times': True}, 'times is a whole number', id='times true'),
    pytest.param({'query': {'limit': None}}, 'not None', id='a query value of None'),
])
def test_nonsense_expectations_are_refused(app, expected, words):
    with pytest.raises(ValueError, match=words):
        app.assert_called('listPets', **expected)


def test_a_query_value_may_be_a_tuple(app):
    webtest.TestApp(app).get('/v1/pets?status=sold&status=pending', headers=AUTH, status=400)
    app.assert_called('GET /pets', query={'status': ('sold', 'pending')})


def test_the_documentation_shows_the_message_pytest_prints(app):
    readme = (Path(__file__).parent.parent / 'docs' / 'testing.md').read_text(encoding='utf-8')
    single = stub.create_stub()
    webtest.TestApp(single).post_json('/v1/pets', {'name': 'Rex', 'categoryId': '3'},
                                      headers=AUTH, status=400)
    message = failure(single.assert_called, 'createPet', json={'name': 'Rex', 'categoryId': 3})
    shown = 'E       AssertionError: ' + message.replace('\n', '\nE       ')
    assert shown in readme


# -- in another project's pytest -----------------------------------------------------

FAILING_ASSERTION = '''
import requests

def test_the_client_sends_a_number(petstore_server):
    requests.post(petstore_server.url + '/pets', json={'name': 'Rex', 'categoryId': '3'},
                  headers=petstore_server.headers)
    petstore_server.assert_called('createPet', json={'name': 'Rex', 'categoryId': 3})
'''

SWALLOWING_CLIENT = '''
import pytest
import requests

def add_pet_quietly(server, body):
    try:
        requests.post(server.url + '/pets', json=body, headers=server.headers).raise_for_status()
    except requests.HTTPError:
        pass  # the bug: the client swallows its own mistake

@MARK
def test_adding_a_pet(petstore_server):
    add_pet_quietly(petstore_server, {'name': 'Rex', 'categoryId': '3'})
    assert True
'''


@pytest.mark.slow
def test_pytest_prints_the_assertion_message_with_no_traceback_into_the_stub(pytester):
    pytester.makepyfile(test_client=FAILING_ASSERTION)
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert re.search(r"E +AssertionError: createPet was not called with json=\{'name': 'Rex', ",
                     output)
    assert re.search(r"E +categoryId: expected 3, sent '3'", output)
    assert 'petstore_stub.py' not in output


@pytest.mark.slow
def test_the_guard_fails_a_test_whose_client_swallowed_a_400(pytester):
    pytester.makeini('[pytest]\npetstore_fail_on_bad_requests = true\n')
    pytester.makepyfile(test_client=SWALLOWING_CLIENT.replace('@MARK\n', ''))
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    assert ('the code under test sent 1 request(s) the stub refused as malformed:' in output)
    assert re.search(r'POST /v1/pets -> 400 invalid_body .*: categoryId must be an int64 '
                     r'integer; got "3"', output)
    assert '@pytest.mark.petstore_allows_bad_requests' in output


@pytest.mark.slow
def test_the_guard_passes_the_same_test_once_it_is_marked_and_is_off_by_default(pytester):
    pytester.makeini('[pytest]\npetstore_fail_on_bad_requests = true\n')
    pytester.makepyfile(test_client=SWALLOWING_CLIENT.replace(
        '@MARK', '@pytest.mark.petstore_allows_bad_requests'))
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=1)
    pytester.makeini('[pytest]\n')
    pytester.makepyfile(test_client=SWALLOWING_CLIENT.replace('@MARK\n', ''))
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=1)


@pytest.mark.parametrize('status, operation, refused', [
    (400, 'createPet', True), (404, None, True), (405, None, True), (413, 'createPet', True),
    (415, 'createPet', True), (404, 'getPet', False), (401, None, False), (201, 'createPet', False),
    (503, 'listPets', False), (None, 'listPets', False), (431, None, True), (505, None, True),
    (501, 'listOrders', False),
])
def test_what_the_guard_counts_as_malformed(status, operation, refused):
    entry = {'status': status, 'operation': operation, 'fault': None}
    assert stub.is_refused_as_malformed(entry) is refused
    # A 4xx the test queued itself is the stub's doing, not the client's.
    assert stub.is_refused_as_malformed({**entry, 'fault': status}) is False


def test_a_request_cut_in_the_journal_is_said_to_be_and_the_message_stays_short():
    app = stub.create_stub()
    long_pet = {'name': 'R' * 5000, 'categoryId': 1}
    webtest.TestApp(app).post_json('/v1/pets', long_pet, headers=AUTH, status=201)
    message = failure(app.assert_called, 'createPet', json=long_pet)
    assert '#1 was cut in the journal, which keeps 4096 bytes of a body' in message
    assert len(message) < 2000


@pytest.mark.parametrize('expectation', [
    pytest.param(lambda app: app.assert_called('createPet', json={'name': 'Max', 'categoryId': 1}),
                 id='a create that was not sent'),
    pytest.param(lambda app: app.assert_called('listPets'), id='an operation never called'),
    pytest.param(lambda app: app.assert_not_called('createPet'), id='an operation called'),
])
def test_a_failure_among_many_requests_lists_a_few_and_counts_the_rest(expectation):
    app = stub.create_stub()
    client = webtest.TestApp(app)
    for number in range(50):
        client.post_json('/v1/pets', {'name': f'Rex{number}', 'categoryId': 1}, headers=AUTH)
    message = failure(expectation, app)
    assert len(message.splitlines()) <= 12
    assert '... and 45 more' in message
