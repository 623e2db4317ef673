"""The stub as a fixture server: serve(), check(), reset, delay, faults, admin endpoints."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pydantic
import pytest
import requests
import webtest

import petstore_stub as stub
from conftest import AUTH, call_once, connect, fetched, make_client, wait_until

REX: dict[str, Any] = {'name': 'Rex', 'categoryId': 1, 'status': 'available'}


def path_of(server: stub.StubServer, suffix: str) -> str:
    return urlsplit(server.url).path + suffix


# -- serve() and StubServer ------------------------------------------------------

def test_serve_runs_on_a_free_loopback_port_with_the_demo_key():
    with stub.serve() as server:
        assert server.url == f'http://127.0.0.1:{server.port}/v1'
        assert server.port > 0
        assert server.api_key == stub.DEMO_API_KEY
        assert server.headers == {'Authorization': 'Bearer petstore-demo-key'}
        assert call_once(server.url, 'GET', '/v1/pets') == (200, [])


def test_serve_refuses_the_demo_key_on_a_network_host_before_it_binds(tmp_path):
    with pytest.raises(ValueError, match='the demo key is published; choose another key'):
        with stub.serve(host='0.0.0.0', api_keys=[stub.DEMO_API_KEY], db=tmp_path / 'pets.json'):
            pass
    assert list(tmp_path.iterdir()) == []


def test_serve_on_a_network_host_without_a_key_generates_one():
    with stub.serve(host='0.0.0.0') as server:
        assert server.api_key != stub.DEMO_API_KEY and len(server.api_key) >= 32
        loopback = f'http://127.0.0.1:{server.port}'
        assert requests.get(f'{loopback}/v1/pets', headers=AUTH, timeout=10).status_code == 401
        assert requests.get(f'{loopback}/__admin/requests', headers=AUTH,
                            timeout=10).status_code == 401
        assert requests.get(f'{loopback}/v1/pets', headers=server.headers,
                            timeout=10).status_code == 200


def test_serve_takes_api_keys_as_create_stub_does_and_api_key_with_a_deprecation_warning():
    with stub.serve(api_keys=['k-1', 'k-2']) as server:
        assert server.api_key == 'k-1' and server.app.api_keys == ('k-1', 'k-2')
    with pytest.warns(DeprecationWarning, match=r'give serve\(api_keys=\[KEY\]\)') as warned:
        with stub.serve(api_key='k-3') as server:
            assert server.app.api_keys == ('k-3',)
    assert warned[0].filename == __file__  # the caller's line, not the stub's
    for none in ('k-4', []):  # one string, or no key at all
        with pytest.raises(ValueError, match='give a list of one or more API keys'):
            with stub.serve(api_keys=none):
                pass


@pytest.mark.parametrize(('keys', 'refusal'), [
    ('k-1', 'give a list of one or more API keys'), ([], 'give a list of one or more API keys'),
    (['k 1'], "API key 'k 1' is not a valid bearer token"), ([1], 'API key 1 is not a valid')])
def test_create_stub_refuses_keys_that_no_client_could_send(keys, refusal):
    with pytest.raises(ValueError, match=refusal):
        stub.create_stub(api_keys=keys)


def test_serve_staging_with_its_own_key():
    with stub.serve(staging=True, api_keys=['k-123']) as server:
        assert server.url.endswith('/staging/v1')
        assert server.headers == {'Authorization': 'Bearer k-123'}
        connection = connect(server.url)
        connection.request('GET', '/staging/v1/pets', headers=server.headers)
        assert connection.getresponse().status == 200
        connection.close()


def test_serve_keeps_nothing_on_disk_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with stub.serve() as server:
        server.add_pet('Rex', 1)
    assert list(tmp_path.iterdir()) == []


def test_serve_with_a_db_file_keeps_the_pets(tmp_path):
    with stub.serve(db=tmp_path / 'pets.json') as server:
        server.add_pet('Rex', 1)
    with stub.StubStore(tmp_path / 'pets.json') as reopened:
        assert fetched(reopened, 1)['name'] == 'Rex'


def test_serve_can_start_with_the_demo_animals():
    with stub.serve(fixtures=True) as server:
        status, pets = call_once(server.url, 'GET', '/v1/pets?limit=100')
    assert status == 200 and len(pets) == 13


def test_a_second_start_is_refused():
    with stub.serve() as server, pytest.raises(RuntimeError, match='already started'):
        server.start()


def test_stop_is_prompt_and_closes_the_port():
    with stub.serve() as server:
        call_once(server.url, 'GET', '/v1/pets')
        idle_connection = connect(server.url)
        idle_connection.connect()
        server.stop()
        # Closed by the server, not left to its idle timeout; and the thread has ended.
        try:
            assert idle_connection.sock.recv(1) == b''
        except ConnectionResetError:
            pass
        finally:
            idle_connection.close()
        assert f'petstore-stub:{server.port}' not in [t.name for t in threading.enumerate()]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(('127.0.0.1', server.port), timeout=2).close()


def test_an_error_inside_the_server_reaches_the_caller(monkeypatch):
    with pytest.raises(stub.ServerError, match='ZeroDivisionError') as caught:
        with stub.serve() as server:
            monkeypatch.setattr(stub, 'parse_limit', lambda *a, **k: 1 / 0 or [])
            status, error = call_once(server.url, 'GET', '/v1/pets')
            assert (status, error['code']) == (500, 'internal_error')
            monkeypatch.setattr(stub, 'parse_limit', _raise_runtime_error)
            call_once(server.url, 'GET', '/v1/pets')
    assert isinstance(caught.value.__cause__, ZeroDivisionError)
    assert '1 more' in str(caught.value)


def _raise_runtime_error(*args, **kwargs):
    raise RuntimeError('a bug in the stub')


def test_stop_from_several_threads_at_once_stops_the_server_once():
    server = stub.StubServer(stub.create_stub()).start()
    stoppers = [threading.Thread(target=server.stop) for _ in range(3)]
    for stopper in stoppers:
        stopper.start()
    for stopper in stoppers:
        stopper.join(10)
    assert not any(stopper.is_alive() for stopper in stoppers)
    assert not server._thread.is_alive()
    server.check()  # nothing failed inside it


def test_a_failure_in_what_is_noted_of_a_request_is_kept_for_check_and_the_answer_stands():
    def broken_log(line: str) -> None:
        raise RuntimeError('a log that fails')
    app = stub.create_stub(access_log=broken_log)
    client = webtest.TestApp(app)
    assert client.get('/v1/pets', headers=AUTH).json == []
    assert [entry['status'] for entry in app.requests] == [200]
    (error, text), = app.errors
    assert isinstance(error, RuntimeError) and 'a log that fails' in text


def test_check_raises_once_and_then_is_clear(monkeypatch):
    with stub.serve() as server:
        monkeypatch.setattr(stub, 'parse_limit', _raise_runtime_error)
        call_once(server.url, 'GET', '/v1/pets')
        with pytest.raises(stub.ServerError, match='a bug in the stub'):
            server.check()
        server.check()


def test_check_reports_a_queued_fault_not_used_up():
    with stub.serve() as server:
        server.fail_next(503, times=2, route='listPets', after=1)
        assert [call_once(server.url, 'GET', '/v1/pets')[0] for _ in range(2)] == [200, 503]
        with pytest.raises(AssertionError) as raised:
            server.check()
        assert str(raised.value) == ('1 queued fault was not used up:\n'
                                     '  503 for listPets: times 1 of 2 left, after 0 of 1 left')
        server.check()  # reported once, and dropped


def test_failures_kept_for_check_are_bounded_and_hold_no_frames(monkeypatch):
    import webtest
    app = stub.create_stub()
    monkeypatch.setattr(stub, 'parse_limit', lambda *args, **options: 1 / 0)
    client = webtest.TestApp(app)
    for _ in range(150):
        client.get('/v1/pets', headers=AUTH, status=500, expect_errors=True)
    assert len(app.errors) == 100
    assert all(error.__traceback__ is None for error, _ in app.errors)
    assert 'ZeroDivisionError' in app.errors[0][1]


def test_a_fault_dropped_by_a_reset_is_not_reported():
    with stub.serve() as server:
        server.fail_next('drop')
        server.reset()
    # serve() ends with check(), which raises for a fault still queued.


# -- reset, add_pet, load_fixtures ----------------------------------------------

def test_reset_empties_store_journal_faults_and_delay():
    with stub.serve() as server:
        server.add_pet('Rex', 1)
        call_once(server.url, 'GET', '/v1/pets')
        server.fail_next(503, times=5)
        server.delay = 2.0
        server.reset()
        assert server.requests == []
        assert server.delay == 0
        assert call_once(server.url, 'GET', '/v1/pets') == (200, [])
        assert server.add_pet('Bella', 2)['id'] == 1


def test_a_reset_the_disk_refuses_changes_nothing(tmp_path, monkeypatch):
    app = stub.create_stub(stub.StubStore(tmp_path / 'pets.json'), admin=True)
    client = make_client(app)
    client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1})
    app.fail_next(503)
    app.set_delay(0.5, route='getPet')
    before = (app.requests, app.faults.listed(), app.settings())

    def full_disk(descriptor: int, data: bytes) -> None:
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(stub, 'append_durably', full_disk)
    refused = client.post('/__admin/reset', status=500).json
    assert (refused['code'], refused['message'].endswith('nothing was changed')) == (
        'storage_error', True)
    assert (app.requests, app.faults.listed(), app.settings()) == before
    assert len(app.store) == 1
    app.store.close()


def test_add_pet_validates_like_the_api():
    with stub.serve() as server:
        assert server.add_pet('Mystery', 2) == {'id': 1, 'name': 'Mystery', 'categoryId': 2}
        assert server.add_pet('Kiwi', 3, 'sold')['status'] == 'sold'
        with pytest.raises(stub.ApiError, match='categoryId'):
            server.add_pet('Bad', '3')
        assert server.requests == []


def test_load_fixtures_adds_the_demo_animals_or_a_file(tmp_path):
    path = tmp_path / 'mine.json'
    path.write_text(json.dumps([REX]))
    with stub.serve() as server:
        assert len(server.load_fixtures()) == 13
        server.reset()
        assert server.load_fixtures(path) == [{'id': 1, **REX}]


def test_fixtures_go_into_an_empty_store_only_so_a_second_load_duplicates_nothing():
    with stub.serve() as server:
        server.load_fixtures()
        with pytest.raises(stub.ApiError) as caught:
            server.load_fixtures()
        assert (caught.value.status_code, caught.value.code) == (409, 'store_not_empty')
        assert 'reset it first' in caught.value.message
        assert len(server.app.store) == 13


# -- delay -----------------------------------------------------------------------

@pytest.mark.slow  # a delay waited out, by design
def test_delay_slows_each_response_so_a_client_times_out():
    with stub.serve() as server:
        server.delay = 0.2
        started = time.monotonic()
        assert call_once(server.url, 'GET', '/v1/pets')[0] == 200
        assert time.monotonic() - started >= 0.2  # a lower bound: it holds on any machine
        server.delay = 60
        impatient = http.client.HTTPConnection('127.0.0.1', server.port, timeout=0.05)
        impatient.request('GET', '/v1/pets', headers=server.headers)
        with pytest.raises(TimeoutError):
            impatient.getresponse()
        wait_until(lambda: server.app.gate.under_way == 1)  # held by the delay: not a slow answer
        impatient.close()


def test_a_request_still_delayed_at_reset_is_dropped_at_once_and_leaves_no_trace(caplog):
    with stub.serve() as server:
        server.delay = 60
        waiting = http.client.HTTPConnection('127.0.0.1', server.port, timeout=30)
        waiting.request('POST', '/v1/pets', json.dumps(REX),
                        {**server.headers, 'Content-Type': 'application/json'})
        wait_until(lambda: server.app.gate.under_way == 1)
        server.reset()
        # Released by the reset, not by its 60 seconds: the connection closes with no answer.
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
            waiting.getresponse()
        waiting.close()
        assert call_once(server.url, 'GET', '/v1/pets') == (200, [])
        assert [request['method'] for request in server.requests] == ['GET']
    assert not caplog.records  # nothing logged of it


# -- faults ----------------------------------------------------------------------

def test_fail_next_answers_once_with_that_status_and_an_error_body():
    with stub.serve() as server:
        server.fail_next(503)
        assert call_once(server.url, 'GET', '/v1/pets') == (503, {
            'code': 'service_unavailable', 'message': 'Service Unavailable (a fault queued on the stub)',
            'status': 503})
        assert call_once(server.url, 'GET', '/v1/pets') == (200, [])


def fault_answer(server: stub.StubServer, status: int) -> tuple[int, object, list[str]]:
    """The status, the Error body's status and its fields, of a request met by that fault."""
    server.fail_next(status)
    connection = connect(server.url)
    connection.request('GET', '/v1/pets', headers=AUTH)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    error = json.loads(body) if response.getheader('Content-Type') == 'application/json' else {}
    return response.status, error.get('status'), sorted(error)


def test_every_fault_status_is_an_error_body_on_a_real_server():
    with stub.serve() as server:
        answers = {status: fault_answer(server, status) for status in range(400, 600)}
    assert answers == {status: (status, status, ['code', 'message', 'status'])
                       for status in range(400, 600)}


@pytest.mark.parametrize('status, code, header, value', [
    pytest.param(401, 'invalid_token', 'WWW-Authenticate',
                 'Bearer realm="petstore", error="invalid_token"', id='401 with its challenge'),
    pytest.param(405, 'method_not_allowed', 'Allow', 'GET, POST',
                 id='405 with the methods of the path'),
    pytest.param(499, 'http_499', 'Content-Type', 'application/json', id='499, unnamed'),
    pytest.param(599, 'http_599', 'Content-Type', 'application/json', id='599, unnamed'),
])
def test_a_fault_status_carries_the_header_http_requires_of_it(status, code, header, value):
    client = make_client(stub.create_stub())
    client.app.fail_next(status)
    response = client.get('/v1/pets', status=status)
    assert (response.json['code'], response.headers[header]) == (code, value)


@pytest.mark.parametrize('status, code', [
    (418, 'i_m_a_teapot'), (502, 'bad_gateway'), (505, 'http_version_not_supported'),
    (431, 'header_too_large'), (599, 'http_599'),
    (414, 'uri_too_long'), (416, 'range_not_satisfiable'), (422, 'unprocessable_content'),
])
def test_error_codes_named_after_a_status_are_lowercase_words_joined_by_underscores(status, code):
    assert stub.error_code_name(status) == code


def test_fail_next_fails_that_many_requests_of_its_route_only():
    with stub.serve() as server:
        server.fail_next(500, times=2, route='createPet')
        assert call_once(server.url, 'GET', '/v1/pets')[0] == 200
        assert call_once(server.url, 'POST', '/v1/pets', REX)[0] == 500
        assert call_once(server.url, 'POST', '/v1/pets', REX)[0] == 500
        assert call_once(server.url, 'POST', '/v1/pets', REX) == (201, {'id': 1, **REX})


def test_a_failed_create_stores_nothing():
    with stub.serve() as server:
        server.fail_next(429, route='createPet')
        status, error = call_once(server.url, 'POST', '/v1/pets', REX)
        assert (status, error['code']) == (429, 'too_many_requests')
        assert call_once(server.url, 'GET', '/v1/pets') == (200, [])


def test_a_fault_waits_until_a_request_is_authenticated():
    with stub.serve() as server:
        server.fail_next(503)
        connection = connect(server.url)
        connection.request('GET', '/v1/pets')
        assert connection.getresponse().status == 401
        connection.close()
        assert call_once(server.url, 'GET', '/v1/pets')[0] == 503


def test_fail_next_drop_closes_the_connection_without_a_response():
    with stub.serve() as server:
        server.fail_next('drop', route='getPet')
        connection = connect(server.url)
        connection.request('GET', '/v1/pets/1', headers=server.headers)
        with pytest.raises(http.client.RemoteDisconnected):
            connection.getresponse()
        connection.close()
        assert call_once(server.url, 'GET', '/v1/pets/1')[0] == 404
        assert [r['status'] for r in server.requests] == [None, 404]


@pytest.mark.parametrize('fault, options, words', [
    (200, {}, 'fault must be an HTTP error status'),
    (999, {}, 'fault must be'),
    ('503', {}, 'fault must be'),
    ('explode', {}, 'fault must be'),
    (503, {'times': 0}, 'times must be a whole number from 1'),
    (503, {'after': -1}, 'after must be a whole number from 0'),
    (503, {'route': 'noSuchOperation'}, 'route must be one of'),
    (500, {'retry_after': 5}, 'retry_after goes with a 429 or a 503; this fault is 500'),
    (404, {'retry_after': 2}, 'retry_after goes with a 429 or a 503; this fault is 404'),
    (503, {'retry_after': -1}, 'retry_after is whole seconds, 0 to 86400; got -1'),
    (503, {'retry_after': 1.5}, 'retry_after is whole seconds, 0 to 86400; got 1.5'),
    ('drop', {'seconds': 1}, 'seconds goes with hang or slow'),
    ('hang', {'seconds': 0}, 'seconds goes with hang or slow'),
    ('slow', {'seconds': 61}, 'seconds goes with hang or slow'),
])
def test_fail_next_refuses_a_fault_it_cannot_inject(fault, options, words):
    with pytest.raises(ValueError, match=words):
        stub.create_stub().fail_next(fault, **options)


def set_delay(app: stub.StubApp, seconds: Any) -> None:
    app.delay = seconds


@pytest.mark.parametrize('call, words', [
    pytest.param(lambda app: app.fail_next(503, route='noSuchOperation'), 'or None; got',
                 id='fail_next route'),
    pytest.param(lambda app: app.fail_next(503, times=None), 'got None', id='fail_next times'),
    pytest.param(lambda app: set_delay(app, None), 'got None', id='delay'),
    pytest.param(lambda app: app.assert_called('listPets', times=False), 'got False',
                 id='assert_called times'),
    pytest.param(lambda app: app.assert_called('listPets', query={'limit': None}), 'not None',
                 id='assert_called query'),
])
def test_a_python_call_refused_names_values_in_python(call, words):
    with pytest.raises(ValueError, match=words) as refused:
        call(stub.create_stub())
    assert not {'null', 'true', 'false'} & set(str(refused.value).replace(';', ' ').split())


def test_the_admin_endpoint_refusing_a_route_names_null(admin_client):
    response = admin_client.post_json('/__admin/faults', {'fault': 503, 'route': 'noSuchOperation'},
                                      status=400)
    assert 'or null; got' in response.json['message']


# -- a strict client's model, and the requests no operation answers ------------------------

def test_a_strict_client_s_model_takes_the_pets_the_stub_answers() -> None:
    class Pet(pydantic.BaseModel, extra='forbid'):  # as a generated client's model may be
        id: int
        name: str
        categoryId: int
        status: str | None = None

    client = make_client(stub.create_stub())
    assert Pet.model_validate(client.post_json('/v1/pets', REX, status=201).json).id == 1


def test_the_requests_no_operation_answered_are_listed_with_what_the_stub_answered():
    app = stub.create_stub(admin=True)
    client = make_client(app)
    client.get('/v1/pets')
    client.get('/v1/pest', status=404)  # a typo
    client.patch('/v1/pets/1', status=405)  # a method the path does not take
    client.post_json('/v1/pets', REX, headers={'Authorization': 'Bearer wrong'}, status=401)
    client.get('/pets', headers={'Authorization': ''}, status=401)  # no route, no key
    client.get('/v1/pets/1', status=404)  # an operation's answer
    unmatched = app.unmatched_requests()
    assert [(entry['method'], entry['path'], entry['status'], entry['error']['code'])
            for entry in unmatched] == [('GET', '/v1/pest', 404, 'not_found'),
                                        ('PATCH', '/v1/pets/1', 405, 'method_not_allowed'),
                                        ('GET', '/pets', 401, 'unauthorized')]
    assert client.get('/__admin/requests/unmatched').json == unmatched
    assert [entry['unmatched'] for entry in app.requests] == [False, True, True, False, True,
                                                              False]


def test_requests_the_server_refused_before_routing_are_unmatched_and_a_preflight_is_not():
    with stub.serve(cors=True) as server:
        with socket.create_connection(('127.0.0.1', server.port), timeout=5) as raw:
            raw.sendall(b'GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n')
            raw.recv(4096)
        for method, headers in (('GET', {'Host': 'evil.example', **AUTH}), ('OPTIONS', {
                'Origin': 'https://app.example', 'Access-Control-Request-Method': 'POST'})):
            connection = http.client.HTTPConnection('127.0.0.1', server.port, timeout=5)
            connection.request(method, '/v1/pets', headers=headers)
            connection.getresponse().read()
            connection.close()
        assert [(entry['status'], entry['unmatched']) for entry in server.requests] == [
            (400, True), (421, True), (204, False)]


# -- the admin endpoints ---------------------------------------------------------

@pytest.fixture
def admin_client():
    return make_client(stub.create_stub(admin=True))


def test_admin_endpoints_are_404_unless_enabled(client):
    for method, path in [('POST', '/__admin/reset'), ('GET', '/__admin/requests'),
                         ('POST', '/__admin/fixtures'), ('POST', '/__admin/faults')]:
        response = client.request(path, method=method, status='*')
        assert (response.status_int, response.json['code']) == (404, 'not_found')


def test_admin_endpoints_need_the_key(admin_client):
    response = webtest.TestApp(admin_client.app).post('/__admin/reset', status='*')
    assert response.status_int == 401


def test_admin_fixtures_loads_the_demo_animals_and_admin_reset_removes_them(admin_client):
    loaded = admin_client.post('/__admin/fixtures', status=201).json
    assert len(loaded) == 13 and loaded[0]['id'] == 1
    assert len(admin_client.get('/v1/pets?limit=100').json) == 13
    admin_client.post('/__admin/reset', status=204)
    assert admin_client.get('/v1/pets').json == []


def test_admin_requests_lists_the_journal_without_admin_calls(admin_client):
    admin_client.post('/__admin/fixtures')
    admin_client.post_json('/v1/pets', REX)
    admin_client.get('/v1/pets/1')
    journal = admin_client.get('/__admin/requests').json
    assert [(r['method'], r['path'], r['status']) for r in journal] == [
        ('POST', '/v1/pets', 201), ('GET', '/v1/pets/1', 200)]


def test_admin_requests_since_lists_only_the_entries_after_it_even_across_a_reset(admin_client):
    for limit in (1, 2, 3):
        admin_client.get(f'/v1/pets?limit={limit}')
    journal = admin_client.get('/__admin/requests').json
    assert [entry['sequence'] for entry in journal] == [1, 2, 3]
    since = admin_client.get('/__admin/requests?since=2').json
    assert [entry['query'] for entry in since] == ['limit=3']
    admin_client.post('/__admin/reset', status=204)
    admin_client.get('/v1/pets?limit=4')
    assert [entry['sequence'] for entry in admin_client.get('/__admin/requests?since=2').json] == [4]


@pytest.mark.parametrize('query', [
    pytest.param('since=abc', id='a word'), pytest.param('since=-1', id='negative'),
    pytest.param('since=', id='empty'), pytest.param('since=1&since=2', id='twice'),
    pytest.param('since=1.5', id='a fraction'), pytest.param('limit=5', id='another name'),
    pytest.param('since=1&x=2', id='and another name'), pytest.param('since=%FF', id='not UTF-8'),
])
def test_admin_requests_refuses_a_query_it_cannot_answer(admin_client, query):
    response = admin_client.get(f'/__admin/requests?{query}', status=400)
    assert response.json['code'] == 'invalid_parameter'


def test_admin_fixtures_on_a_store_with_pets_is_a_409_that_changes_nothing(admin_client):
    admin_client.post_json('/v1/pets', REX)
    response = admin_client.post('/__admin/fixtures', status=409)
    assert response.json['code'] == 'store_not_empty'
    assert admin_client.get('/v1/pets').json == [{'id': 1, **REX}]


def test_admin_faults_queue_a_fault(admin_client):
    response = admin_client.post_json('/__admin/faults', {'fault': 502, 'route': 'listPets'},
                                      status=201)
    assert response.json == {'id': 1, 'fault': 502, 'times': 1, 'route': 'listPets', 'after': 0,
                             'retry_after': None, 'seconds': None}
    assert admin_client.get('/v1/pets', status=502).json['code'] == 'bad_gateway'
    admin_client.get('/v1/pets', status=200)


@pytest.mark.parametrize('body', [
    {'fault': 'sluggish'}, {'fault': 503, 'times': -1}, {'fault': 503, 'route': 'x'},
    {'fault': 503, 'every': 2}, {}, {'fault': 'slow', 'seconds': 'long'},
])
def test_admin_faults_refuse_a_bad_fault(admin_client, body):
    response = admin_client.post_json('/__admin/faults', body, status=400)
    assert response.json['code'] == 'invalid_body'
    assert 'None' not in response.json['message']
    admin_client.get('/v1/pets', status=200)


@pytest.mark.parametrize('body', [{'status': 503}, {'fault': 503, 'status': 503}])
def test_admin_faults_with_a_status_field_is_a_400_naming_it(admin_client, body):
    response = admin_client.post_json('/__admin/faults', body, status=400)
    assert response.json == {'code': 'invalid_body', 'status': 400, 'message':
                             "unknown field 'status'; a fault has fault, times, route, after, "
                             'retry_after and seconds'}
    admin_client.get('/v1/pets', status=200)


@pytest.mark.slow  # its clients wait half a second before giving up
def test_requests_a_test_leaves_in_flight_never_reach_the_next_test():
    lines = []
    app = stub.create_stub(access_log=lines.append)
    with stub.StubServer(app) as server:
        app.delay = 5  # eight requests held

        def create() -> None:
            with contextlib.suppress(requests.RequestException):
                requests.post(server.url + '/pets', json=REX, headers=server.headers, timeout=0.5)
        clients = [threading.Thread(target=create) for _ in range(8)]
        for client in clients:
            client.start()
        wait_until(lambda: app.gate.under_way == 8)  # each held by the delay, however slow
        for client in clients:
            client.join()  # each gave up after half a second: the test is over
        server.reset()
        wait_until(lambda: len(lines) == 8)
        assert [line.split()[5] for line in lines] == ['dropped'] * 8
        assert (len(app.store), app.requests) == (0, [])
        assert server.add_pet('Next', 1)['id'] == 1


@pytest.mark.parametrize('seconds', ['2', [1], -1, float('nan'), True, 61])
def test_a_delay_that_is_no_number_of_seconds_is_refused(seconds):
    with stub.serve() as server:
        with pytest.raises(ValueError, match='seconds must be a number from 0 to 60'):
            server.delay = seconds
        assert server.delay == 0 and call_once(server.url, 'GET', '/v1/pets')[0] == 200


@pytest.mark.parametrize('api_keys', [[''], [None], 'petstore-demo-key', [], ['two words']])
def test_an_api_key_no_client_could_send_is_refused(api_keys):
    with pytest.raises(ValueError, match='API key|list of one or more'):
        stub.create_stub(api_keys=api_keys)


def test_after_a_stop_nothing_is_held_again():
    app = stub.create_stub()
    app.gate.release()
    # At once: a request that would wait for a worker must not.
    assert app.gate.hold(30, stub.Exchange(time.monotonic_ns())) is True


def test_a_request_under_way_at_a_clear_holds_no_more_even_if_it_reaches_its_hold_after():
    app = stub.create_stub()
    exchange = stub.Exchange(time.monotonic_ns())  # as the server makes one, as a request arrives
    app.reset()
    assert app.gate.hold(30, exchange) is True  # at once, though the reset is over
    assert app.gate.hold(0.01, stub.Exchange(time.monotonic_ns())) is False  # a new one is held


@pytest.mark.parametrize('fault', ['drop', 'reset', 'hang'])
def test_a_connection_fault_in_process_says_it_needs_a_server(fault):
    client = make_client(stub.create_stub())
    client.app.fail_next(fault)  # hang would otherwise hold this test for 30 s first
    response = client.get('/v1/pets', status=500)
    assert response.json['code'] == 'fault_needs_a_server'
    assert 'use petstore_server or serve()' in response.json['message']
    assert client.app.requests[-1]['status'] == 500 and not client.app.errors


def test_a_request_refused_as_not_valid_http_before_a_clear_is_not_journalled_after_it():
    app = stub.create_stub()
    refused = stub.Exchange(time.monotonic_ns(), stub.ApiError(400, 'bad_request', 'not HTTP'),
                            can_close=True)  # as the server makes one for a request it refuses
    app.reset()  # begun after it arrived, ended before it was answered
    response = make_client(app).get('/v1/pets', extra_environ={stub.EXCHANGE: refused},
                                    status=400)
    assert response.json['message'] == 'not HTTP'
    assert app.requests == []


@pytest.mark.slow  # it gives the server a fifth of a second to read a request
def test_a_request_sent_while_a_reset_runs_waits_for_it_and_is_kept():
    resetting, resume = threading.Event(), threading.Event()

    class SlowToReset(stub.StubStore):
        def reset(self) -> None:
            resetting.set()
            resume.wait(10)
            super().reset()

    app = stub.create_stub(SlowToReset())
    with stub.StubServer(app) as server:
        server.add_pet('Old', 1)
        clearing = threading.Thread(target=server.reset)
        clearing.start()
        resetting.wait(10)
        answers = []
        client = threading.Thread(target=lambda: answers.append(requests.post(
            server.url + '/pets', json=REX, headers=server.headers, timeout=10)))
        client.start()
        time.sleep(0.2)  # read by the server: it waits for the reset
        resume.set()
        clearing.join()
        client.join()
        assert (answers[0].status_code, answers[0].json()) == (201, {'id': 1, **REX})
        assert [entry['status'] for entry in app.requests] == [201]
        assert call_once(server.url, 'GET', '/v1/pets') == (200, [{'id': 1, **REX}])


def test_a_server_offers_its_apps_test_api_to_read_set_and_list():
    with stub.serve() as server:
        assert {'add_pet', 'fail_next', 'assert_called', 'requests', 'reset', 'delay'} <= set(
            dir(server))
        assert server.fail_next.__doc__ == stub.StubApp.fail_next.__doc__
        server.delay = 0.5
        assert server.app.delay == server.delay == 0.5
        with pytest.raises(AttributeError, match='no_such_thing'):
            server.no_such_thing  # noqa: B018 (the attribute's lookup is what raises)


@pytest.mark.parametrize('name', ['times', 'after'])
def test_times_and_after_go_up_to_a_million(name):
    app = stub.create_stub()
    app.fail_next(503, **{name: stub.FAULT_COUNT_MAX})
    with pytest.raises(ValueError, match=f'{name} must be a whole number from [01] to 1000000; '
                                         'got 1000000000'):
        app.fail_next(503, **{name: 10 ** 57})


def test_the_fault_queue_holds_100_and_refuses_the_next_until_one_fires(admin_client):
    for _ in range(stub.FAULTS_QUEUED_MAX):
        admin_client.post_json('/__admin/faults', {'fault': 503}, status=201)
    refused = admin_client.post_json('/__admin/faults', {'fault': 429}, status=409).json
    assert refused['code'] == 'too_many_faults' and '100 faults are queued' in refused['message']
    with pytest.raises(ValueError, match='100 faults are queued'):
        admin_client.app.fail_next(429)
    admin_client.get('/v1/pets', status=503)
    admin_client.post_json('/__admin/faults', {'fault': 429}, status=201)
    assert len(admin_client.get('/__admin/faults').json['faults']) == stub.FAULTS_QUEUED_MAX
