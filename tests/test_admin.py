"""The admin endpoints a suite in any language drives: health, the journal, assertions, faults,
the delay; as strict about their inputs as the API."""

import json
import urllib.parse

import pytest
import webtest

import petstore_stub as stub
from conftest import make_client

REX = {'name': 'Rex', 'categoryId': 1}


@pytest.fixture
def admin():
    return make_client(stub.create_stub(admin=True))


def test_health_needs_no_key_and_names_the_base_url():
    client = webtest.TestApp(stub.create_stub(admin=True, base_path=stub.STAGING_BASE_PATH))
    assert client.get('/__admin/health').json == {
        'status': 'ok', 'version': stub.__version__, 'base_url': 'http://localhost:80/staging/v1'}


def test_health_on_loopback_refuses_a_foreign_host_name():
    client = webtest.TestApp(stub.create_stub(admin=True, allowed_hosts=()))
    response = client.get('/__admin/health', headers={'Host': 'evil.example'}, status=421)
    assert response.json['code'] == 'misdirected_request'


# -- count and assert: assert_called's filter, over HTTP ------------------------------

@pytest.fixture
def journal(admin):
    admin.post_json('/v1/pets', REX)
    admin.post_json('/v1/pets', {'name': 'Bella', 'categoryId': '2'}, status=400)
    admin.get('/v1/pets?limit=5&status=sold')
    return admin


@pytest.mark.parametrize('call, count', [
    pytest.param({'operation': 'createPet'}, 2, id='an operation'),
    pytest.param({'operation': 'createPet', 'json': REX}, 1, id='and a body'),
    pytest.param({'method': 'post', 'path': '/pets'}, 2, id='a method and a path'),
    pytest.param({'method': 'GET', 'path': '/v1/pets', 'query': {'limit': 5}}, 1,
                 id='a query, as text'),
    pytest.param({'operation': 'listPets', 'query': {'limit': '6'}}, 0, id='a query not sent'),
    pytest.param({'operation': 'createPet', 'headers': {'content-type': 'application/json'}}, 2,
                 id='a header, in any case'),
    pytest.param({'operation': 'getPet', 'json': None}, 0, id='null as not given'),
    pytest.param({'operation': 'createPet', 'json_including': {'name': 'Rex'}}, 1,
                 id='a body holding at least'),
    pytest.param({'operation': 'createPet', 'json': {'name': 'Rex'}}, 0, id='a whole body'),
])
def test_count_counts_the_calls_that_match_every_part(journal, call, count):
    assert journal.post_json('/__admin/requests/count', call).json == {'count': count}


@pytest.mark.parametrize('call', [{'operation': 'createPet', 'json': REX, 'json_including': REX},
                                  {'operation': 'createPet', 'json_including': ['Rex']}])
def test_json_including_is_an_object_given_instead_of_json(journal, call):
    response = journal.post_json('/__admin/requests/count', call, status=400)
    assert response.json['message'].startswith('json_including is an object the body holds at '
                                                'least, given instead of json; got {')


def test_assert_that_holds_says_how_many_matched(journal):
    response = journal.post_json('/__admin/requests/assert', {'operation': 'createPet'})
    assert response.json == {'matched': 2}
    response = journal.post_json('/__admin/requests/assert', {'operation': 'getPet', 'times': 0})
    assert response.json == {'matched': 0}


@pytest.mark.parametrize('call, expected', [
    pytest.param({'operation': 'createPet', 'times': 0}, {'times': 0}, id='times 0: never'),
    pytest.param({'method': 'GET', 'path': '/pets/1'}, {}, id='never called'),
])
def test_assert_that_fails_is_a_409_with_the_message_assert_called_gives(journal, call, expected):
    response = journal.post_json('/__admin/requests/assert', call, status=409)
    what = call.get('operation') or f'{call["method"]} {call["path"]}'
    with pytest.raises(AssertionError) as failed:
        journal.app.assert_called(what, **expected)
    assert (response.json['code'], response.json['message'], response.json['status']) == (
        'assertion_failed', str(failed.value), 409)


def test_assert_shows_the_closest_request_field_by_field_with_values_as_json(journal):
    call = {'operation': 'createPet', 'json': {'name': 'Bella', 'categoryId': 2}}
    message = journal.post_json('/__admin/requests/assert', call, status=409).json['message']
    assert message.startswith('createPet was not called with json={"name": "Bella", '
                              '"categoryId": 2}.')
    assert 'The closest, #2, differs in:\n  categoryId: expected 2, sent "2"' in message


def test_a_failed_assert_carries_the_filter_and_each_call_listed_with_its_differences(journal):
    call = {'operation': 'createPet', 'json': {'name': 'Bella', 'categoryId': 2, 'owner': 'Ann'}}
    assertion = journal.post_json('/__admin/requests/assert', call, status=409).json['assertion']
    assert assertion == {
        'expected': {'call': 'createPet', 'json': call['json'], 'query': None, 'headers': None,
                     'times': None},
        'matched': 0,
        'calls': [
            {'sequence': 1, 'differences': [
                {'field': 'name', 'expected': 'Bella', 'sent': 'Rex'},
                {'field': 'categoryId', 'expected': 2, 'sent': 1},
                {'field': 'owner', 'expected': 'Ann'}]},
            {'sequence': 2, 'differences': [
                {'field': 'categoryId', 'expected': 2, 'sent': '2'},
                {'field': 'owner', 'expected': 'Ann'}]}]}


# -- the journal, the faults, the delay --------------------------------------------------

def test_deleting_the_requests_empties_the_journal_only(admin):
    admin.post_json('/v1/pets', REX)
    admin.post_json('/__admin/faults', {'fault': 503})
    admin.delete('/__admin/requests', status=204)
    assert admin.get('/__admin/requests').json == []
    assert admin.get('/v1/pets', status=503)  # the fault is still queued
    assert admin.get('/v1/pets').json == [{'id': 1, **REX}]


def test_faults_lists_what_is_left_of_each(admin):
    admin.post_json('/__admin/faults', {'fault': 503, 'times': 2, 'after': 1})
    admin.post_json('/__admin/faults', {'fault': 'slow', 'route': 'getPet'})
    admin.get('/v1/pets')
    admin.get('/v1/pets', status=503)
    assert admin.get('/__admin/faults').json == {'faults': [
        {'id': 1, 'fault': 503, 'times': 1, 'route': None, 'after': 0, 'retry_after': None,
         'seconds': None},
        {'id': 2, 'fault': 'slow', 'times': 1, 'route': 'getPet', 'after': 0,
         'retry_after': None, 'seconds': 2.0}]}


def test_deleting_the_faults_cancels_them(admin):
    admin.post_json('/__admin/faults', {'fault': 503, 'times': 5})
    admin.delete('/__admin/faults', status=204)
    assert admin.get('/__admin/faults').json == {'faults': []}
    admin.get('/v1/pets', status=200)


@pytest.mark.parametrize('seconds', [0, 0.25, 60])
def test_delay_sets_the_seconds_each_api_request_waits(admin, seconds):
    assert admin.post_json('/__admin/delay', {'seconds': seconds}).json == {
        'seconds': seconds, 'route': None}
    assert admin.app.delay == seconds


# -- strict inputs --------------------------------------------------------------------------

@pytest.mark.parametrize('method, path, body, code', [
    pytest.param('POST', '/__admin/reset?x=1', None, 'invalid_parameter', id='reset, a query'),
    pytest.param('POST', '/__admin/reset', {}, 'invalid_body', id='reset, a body'),
    pytest.param('POST', '/__admin/fixtures', {'pets': []}, 'invalid_body', id='fixtures, a body'),
    pytest.param('GET', '/__admin/health?verbose=1', None, 'invalid_parameter',
                 id='health, a query'),
    pytest.param('GET', '/__admin/requests?operation=createPet', None, 'invalid_parameter',
                 id='requests, a filter in the query'),
    pytest.param('DELETE', '/__admin/requests?since=3', None, 'invalid_parameter',
                 id='clearing the journal, a query'),
    pytest.param('DELETE', '/__admin/faults', {'fault': 503}, 'invalid_body',
                 id='cancelling faults, a body'),
    pytest.param('GET', '/__admin/faults?route=getPet', None, 'invalid_parameter',
                 id='listing faults, a query'),
    pytest.param('POST', '/__admin/requests/count', {'operation': 'createPet', 'times': 1},
                 'invalid_body', id='count, times'),
    pytest.param('POST', '/__admin/requests/count', {'operation': 'createPet', 'body': {}},
                 'invalid_body', id='count, an unknown field'),
    pytest.param('POST', '/__admin/requests/count', {}, 'invalid_body', id='count, no call'),
    pytest.param('POST', '/__admin/requests/count', {'operation': 'feedPet'}, 'invalid_body',
                 id='count, an unknown operation'),
    pytest.param('POST', '/__admin/requests/count', {'operation': 'getPet', 'path': '/pets'},
                 'invalid_body', id='count, an operation and a path'),
    pytest.param('POST', '/__admin/requests/count', {'method': 'GET'}, 'invalid_body',
                 id='count, a method without a path'),
    pytest.param('POST', '/__admin/requests/count', {'method': 'GET', 'path': 'pets'},
                 'invalid_body', id='count, a relative path'),
    pytest.param('POST', '/__admin/requests/count', {'method': 'GET', 'path': '/pets?limit=1'},
                 'invalid_body', id='count, a query in the path'),
    pytest.param('POST', '/__admin/requests/count', {'method': 1, 'path': '/pets'},
                 'invalid_body', id='count, a method that is no text'),
    pytest.param('POST', '/__admin/requests/count', {'operation': 'listPets', 'query': 'limit=1'},
                 'invalid_body', id='count, a query that is no object'),
    pytest.param('POST', '/__admin/requests/count', {'operation': 'listPets',
                                                     'query': {'all': True}},
                 'invalid_body', id='count, a query value that is no text'),
    pytest.param('POST', '/__admin/requests/count', {'operation': 'listPets',
                                                     'headers': {'X-N': 1}},
                 'invalid_body', id='count, a header that is no text'),
    pytest.param('POST', '/__admin/requests/count', [], 'invalid_body', id='count, no object'),
    pytest.param('POST', '/__admin/requests/assert', {'operation': 'listPets', 'times': -1},
                 'invalid_body', id='assert, negative times'),
    pytest.param('POST', '/__admin/requests/assert', {'operation': 'listPets', 'times': True},
                 'invalid_body', id='assert, times true'),
    pytest.param('POST', '/__admin/delay', {'seconds': -1}, 'invalid_body', id='delay, negative'),
    pytest.param('POST', '/__admin/delay', {'seconds': 61}, 'invalid_body', id='delay, too long'),
    pytest.param('POST', '/__admin/delay', {'seconds': '1'}, 'invalid_body', id='delay, text'),
    pytest.param('POST', '/__admin/delay', {'seconds': False}, 'invalid_body',
                 id='delay, a boolean'),
    pytest.param('POST', '/__admin/delay', {}, 'invalid_body', id='delay, no seconds'),
    pytest.param('POST', '/__admin/delay', {'seconds': 1, 'jitter': 1}, 'invalid_body',
                 id='delay, an unknown field'),
])
def test_an_admin_input_an_endpoint_does_not_take_is_a_400(admin, method, path, body, code):
    response = admin.request(path, method=method, status='*', **(
        {} if body is None else {'body': stub.to_json(body).encode(),
                                 'content_type': 'application/json'}))
    assert (response.status_int, response.json['code']) == (400, code)
    assert admin.app.delay == 0 and admin.app.faults.listed()['faults'] == []


def test_a_filter_sent_as_text_is_a_415(admin):
    response = admin.post('/__admin/requests/count', 'operation=listPets', status=415)
    assert response.json['code'] == 'unsupported_media_type'


def test_a_method_an_admin_path_does_not_serve_is_a_405_naming_those_it_does(admin):
    response = admin.put('/__admin/faults', status=405)
    assert sorted(response.headers['Allow'].split(',')) == ['DELETE', 'GET', 'POST']


@pytest.mark.parametrize('body, status, message', [
    (b' ' * (stub.MAX_BODY_BYTES + 1), 413,
     'the body is over 1048576 bytes, the most an admin request may take'),
    (b'', 400, 'the request body is empty; send the JSON object POST /__admin/faults takes'),
])
def test_an_admin_body_too_large_or_empty_is_refused_in_admin_words(body, status, message):
    client = make_client(stub.create_stub(admin=True))
    response = client.post('/__admin/faults', body, content_type='application/json', status=status)
    assert response.json['message'] == message


@pytest.mark.parametrize('call', [
    pytest.param({}, id='neither'),
    pytest.param({'operation': 'listPets', 'method': 'GET', 'path': '/pets'}, id='both'),
    pytest.param({'method': 'GET'}, id='a method without a path'),
])
def test_a_filter_names_its_calls_one_way_and_says_so(call):
    client = make_client(stub.create_stub(admin=True))
    refused = client.post_json('/__admin/requests/count', call, status=400).json
    assert refused['message'] == ('name the call by operation, or by method and path: '
                                  f'one of the two; got {json.dumps(call)}')


# -- find, settings, one fault ------------------------------------------------------

def test_find_returns_the_entries_a_filter_matches_and_since_one_less_gives_an_entry_first(
        journal):
    found = journal.post_json('/__admin/requests/find', {'operation': 'createPet'}).json
    assert [entry['body'] for entry in found] == [REX, {'name': 'Bella', 'categoryId': '2'}]
    assert found == journal.app.find_requests('createPet')
    assert journal.get(f'/__admin/requests?since={found[1]["sequence"] - 1}').json[0] == found[1]
    journal.delete('/__admin/requests')
    assert journal.get(f'/__admin/requests?since={found[1]["sequence"] - 1}').json == []


def test_a_fault_is_cancelled_by_its_id_and_the_others_stay(admin):
    first = admin.post_json('/__admin/faults', {'fault': 503}, status=201).json['id']
    second = admin.app.fail_next('drop', route='getPet')
    assert second == first + 1
    admin.delete(f'/__admin/faults/{first}', status=204)
    assert admin.delete(f'/__admin/faults/{first}', status=404).json['code'] == 'not_found'
    assert admin.delete('/__admin/faults/one', status=404).json['code'] == 'not_found'
    assert [fault['id'] for fault in admin.get('/__admin/faults').json['faults']] == [second]
    admin.app.cancel_fault(second)
    with pytest.raises(ValueError, match=f'no fault with id {second} is queued'):
        admin.app.cancel_fault(second)
    admin.get('/v1/pets', status=200)


def test_the_settings_name_the_delays_and_what_is_queued(admin):
    assert admin.get('/__admin/settings').json == {
        'delays': [], 'faults_queued': 0, 'journal_size': stub.JOURNAL_SIZE}
    admin.post_json('/__admin/faults', {'fault': 503, 'route': 'createPet'})
    admin.post_json('/__admin/delay', {'seconds': 0.5, 'route': 'getPet'})
    settings = admin.get('/__admin/settings').json
    assert settings == admin.app.settings()
    assert settings['faults_queued'] == 1
    assert [(delay['route'], delay['seconds']) for delay in settings['delays']] == [('getPet', 0.5)]
    admin.post_json('/__admin/reset')
    assert admin.get('/__admin/settings').json['delays'] == []


# -- delays ---------------------------------------------------------------------------

@pytest.mark.parametrize('document, words', [
    ({'seconds': 61}, 'seconds must be a number from 0 to 60; got 61'),
    ({'seconds': 0.1, 'route': 'noSuchOperation'}, 'route must be one of'),
    ({'distribution': 'lognormal', 'median': 0.1},
     "unknown field 'distribution'; a delay has seconds and route"),
])
def test_a_delay_out_of_bounds_or_with_fields_it_lacks_is_refused(admin, document, words):
    assert words in admin.post_json('/__admin/delay', document, status=400).json['message']
    assert admin.app.settings()['delays'] == []


@pytest.mark.parametrize('path, document, shown', [
    ('faults', {'fault': 503, 'times': True}, 'got true'),
    ('faults', {'fault': 503, 'route': 'noSuchOperation'}, 'got "noSuchOperation"'),
    ('delay', {'seconds': False}, 'got false'),
    ('requests/count', {'operation': 'createPet', 'headers': {'a': 1}}, 'got {"a": 1}'),
])
def test_an_admin_refusal_shows_the_value_given_as_json(admin, path, document, shown):
    message = admin.post_json(f'/__admin/{path}', document, status=400).json['message']
    assert message.endswith(shown)


# -- every admin input of a wrong type is a 400, naming what was sent -----------------

#: Each admin request with a body, and a valid body it takes; each field is then sent wrong.
ADMIN_BODIES = {
    '/__admin/requests/count': ('CallFilter', {'operation': 'createPet'}),
    '/__admin/requests/find': ('CallFilter', {'operation': 'createPet'}),
    '/__admin/requests/assert': ('CallAssertion', {'operation': 'createPet', 'times': 0}),
    '/__admin/faults': ('NewFault', {'fault': 503}),
    '/__admin/delay': ('NewDelay', {'seconds': 0}),
}
WRONG_TYPES = {'a list': [1], 'an empty list': [], 'an object': {'a': 1}, 'an empty object': {},
               'a number': 1.5, 'a boolean': True, 'null': None, 'a lone surrogate': '\ud800'}


def admin_body_fields():
    schemas = stub.openapi_template('admin-openapi.json')['components']['schemas']
    return [pytest.param(path, {**valid, field: value}, id=f'{path} {field} {kind}')
            for path, (schema, valid) in ADMIN_BODIES.items()
            for field in schemas[schema]['properties']
            for kind, value in WRONG_TYPES.items()]


@pytest.mark.parametrize('path, body', admin_body_fields())
def test_every_admin_body_field_of_a_wrong_type_is_a_400_or_taken_never_a_500(admin, path, body):
    response = admin.post_json(path, body, expect_errors=True)
    assert response.status_int in (200, 201, 400, 409), response.text
    if response.status_int == 400:  # what was sent is named, unless it is a field left out
        assert response.json['code'] == 'invalid_body'
        assert 'got ' in response.json['message'] or 'is required' in response.json['message']


@pytest.mark.parametrize('fault_id, named', [
    pytest.param('-1', '-1', id='negative'), pytest.param('abc', 'abc', id='a word'),
    pytest.param('1.0', '1.0', id='a decimal'), pytest.param('٣', '\\u0663', id='an Arabic 3'),
    pytest.param('9' * 5000, '9' * 40, id='5,000 digits'), pytest.param('0', '0', id='zero')])
def test_cancelling_a_fault_by_an_id_none_has_names_the_id_sent(admin, fault_id, named):
    admin.app.fail_next(503)
    error = admin.delete(f'/__admin/faults/{urllib.parse.quote(fault_id)}', status=404).json
    assert error['message'].startswith(f'no fault with id {named} is queued'), error['message']
    assert len(admin.get('/__admin/faults').json['faults']) == 1
    admin.app.faults.clear()


def test_a_failed_assertion_echoing_a_lone_surrogate_is_a_409_not_a_500(journal):
    failed = journal.post_json('/__admin/requests/assert',
                               {'operation': 'createPet', 'json': '\ud800'}, status=409)
    assert failed.json['assertion']['expected']['json'] == '\ud800'


@pytest.mark.parametrize('path', ['/__admin/requests/assert', '/__admin/requests/find',
                                  '/__admin/requests/count', '/v1/pets'])
@pytest.mark.parametrize('number', ['1e999', '-1e999'])
def test_a_number_too_large_for_a_double_is_refused_in_every_json_read(journal, path, number):
    body = ('{"name": "Rex", "categoryId": %s}' if path == '/v1/pets' else
            '{"operation": "createPet", "json_including": {"weightKg": %s}}') % number
    answer = journal.post(path, body, {'Content-Type': 'application/json'}, status=400)
    error = json.loads(answer.text, parse_constant=lambda name: pytest.fail(f'{name} sent'))
    assert error['code'] == 'invalid_body' and 'too large for a number' in error['message']
    assert len(journal.app.store) == 1  # the create before it alone


def test_a_path_under_the_admin_prefix_that_is_nothing_names_the_admin_document(admin):
    error = admin.get('/__admin/nope', status=404).json
    assert error['message'] == ('nothing is at /__admin/nope; the admin endpoints are listed in '
                                '/__admin/openapi.json')


@pytest.mark.parametrize('digits', ['1' + '0' * 400, '-' + '9' * 400, '1' * 5000])
def test_an_integer_past_a_doubles_range_is_refused_as_1e400_is(journal, digits):
    body = f'{{"operation": "listPets", "json": {digits}}}'
    error = journal.post('/__admin/requests/count', body, {'Content-Type': 'application/json'},
                         status=400).json
    assert error['code'] == 'invalid_body' and 'too large for a number' in error['message']
    assert 'int_max_str_digits' not in error['message']


def test_without_the_admin_endpoints_a_path_under_their_prefix_names_the_api():
    error = make_client(stub.create_stub()).get('/__admin/nope', status=404).json
    assert error['message'] == 'nothing is at /__admin/nope; the API is under /v1'
