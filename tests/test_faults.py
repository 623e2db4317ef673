"""Faults as real clients meet them: requests (with urllib3's Retry) and httpx are the judges."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import requests
import webtest
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

import petstore_stub as stub
from conftest import AUTH, make_client, wait_until
from test_readme import table_rows

REX = {'name': 'Rex', 'categoryId': 1}


@pytest.fixture(scope='module')
def server():
    with stub.serve() as server:
        yield server


@pytest.fixture(autouse=True)
def fresh(server):
    server.reset()
    server.load_fixtures()
    yield
    server.check()


def with_requests(server, method: str = 'GET', path: str = '/pets', timeout: float = 5,
                  body: dict | None = None):
    response = requests.request(method, server.url + path, json=body, headers=server.headers,
                                timeout=timeout)
    return response.status_code, response.json()


# An httpx client loads the CA certificates unless told not to (25 ms a client); the stub
# speaks plain HTTP, so there is nothing for them to verify.
PLAIN_HTTP: dict[str, Any] = {'verify': False}


def with_httpx(server, method: str = 'GET', path: str = '/pets', timeout: float = 5,
               body: dict | None = None):
    response = httpx.request(method, server.url + path, json=body, headers=server.headers,
                             timeout=timeout, **PLAIN_HTTP)
    return response.status_code, response.json()


CLIENTS = {'requests': with_requests, 'httpx': with_httpx}

def raised_as_documented(over_https: bool = False) -> dict[tuple[str, str], str]:
    """What docs/testing.md's table of faults says each client raises, by fault: the first
    exception each cell names, or the one it names "over HTTPS"."""
    raised = {}
    for fault, _, by_requests, by_httpx, _ in table_rows('testing.md', 'fault'):
        name = re.match(r"`'?([a-z]+)'?`", fault)
        for client, cell in (('requests', by_requests), ('httpx', by_httpx)):
            cell = by_requests if cell.startswith('likewise') else cell
            https = re.search(r'over HTTPS, `(\w+)`', cell) if over_https else None
            raised[fault if name is None else name[1], client] = (
                https[1] if https else re.findall(r'`(\w+)`', cell)[0])
    return raised


RAISED = raised_as_documented()


@contextlib.contextmanager
def raises_named(name: str) -> Iterator[None]:
    """As pytest.raises, for an exception of that name or of a class that derives from it."""
    with pytest.raises(Exception) as caught:
        yield
    assert name in [kind.__name__ for kind in type(caught.value).__mro__], repr(caught.value)


#: The faults whose row names what each client raises as it reads the answer.
CLOSING = [key for key in RAISED if key[0] != 'slow' and not key[0].startswith('a status')]


@pytest.mark.parametrize('fault, client', CLOSING)
def test_each_fault_raises_what_the_client_raises_for_it(server, fault, client):
    server.fail_next(fault, route='listPets')
    with raises_named(RAISED[fault, client]):
        CLIENTS[client](server, timeout=0.05 if fault == 'hang' else 5)
    wait_until(lambda: server.requests)
    assert server.requests[-1]['fault'] == fault  # met: a hang's timeout is not a slow machine's
    assert CLIENTS[client](server) == (200, json.loads(server.app.store.list_json(20)))


@pytest.mark.parametrize('client', CLIENTS)
def test_a_status_fault_raises_what_the_client_raises_for_that_status(server, client):
    (status,) = {fault for fault, _ in RAISED if fault.startswith('a status')}
    server.fail_next(503, route='listPets')
    if client == 'requests':
        response = requests.get(server.url + '/pets', headers=server.headers, timeout=5)
    else:
        response = httpx.get(server.url + '/pets', headers=server.headers, timeout=5,
                             **PLAIN_HTTP)
    with raises_named(RAISED[status, client]):
        response.raise_for_status()
    assert response.json()['code'] == 'service_unavailable'


def test_a_reset_is_a_tcp_reset_before_any_byte(server):
    server.fail_next('reset')
    with pytest.raises(requests.ConnectionError) as caught:
        with_requests(server)
    assert isinstance(caught.value.args[0].args[1], ConnectionResetError)


def test_drop_closes_with_no_response_and_no_reset(server):
    server.fail_next('drop')
    with pytest.raises(requests.ConnectionError) as caught:
        with_requests(server)
    assert 'Remote end closed connection without response' in str(caught.value)


def test_truncate_sends_the_full_length_and_half_the_body(server):
    server.fail_next('truncate')
    with httpx.stream('GET', server.url + '/pets', headers=server.headers, timeout=5,
                      **PLAIN_HTTP) as response:
        length = int(response.headers['Content-Length'])
        received = b''
        with pytest.raises(httpx.RemoteProtocolError):
            for chunk in response.iter_raw():
                received += chunk
    assert response.status_code == 200
    assert len(received) == length // 2


def test_malformed_keeps_the_success_status_and_runs_the_operation(server):
    server.fail_next('malformed', route='createPet')
    response = requests.post(server.url + '/pets', json=REX, headers=server.headers, timeout=5)
    assert response.status_code == 201
    with pytest.raises(requests.exceptions.JSONDecodeError):
        response.json()
    assert len(server.app.store) == 14  # the pet was stored; only its answer was garbled


def test_faults_before_the_operation_store_nothing(server):
    for fault in ('drop', 'reset', 503):
        server.fail_next(fault, route='createPet')
        with pytest.raises((requests.ConnectionError, requests.HTTPError)):
            requests.post(server.url + '/pets', json=REX, headers=server.headers,
                          timeout=5).raise_for_status()
    assert len(server.app.store) == 13


def pipelined_creates(port: int, count: int) -> bytes:
    """``count`` creates sent at once on one connection; all that came back until it closed."""
    body = json.dumps(REX).encode()
    one = (b'POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer petstore-demo-key\r\n'
           b'Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' % (len(body), body))
    received = b''
    with socket.create_connection(('127.0.0.1', port), timeout=10) as connection:
        connection.sendall(one * count)
        with contextlib.suppress(ConnectionResetError):
            while chunk := connection.recv(65536):
                received += chunk
    return received


@pytest.mark.parametrize('fault, options', [('drop', {}), ('reset', {}),
                                            ('hang', {'seconds': 0.02})])
def test_requests_pipelined_behind_a_closing_fault_are_not_served(server, fault, options):
    server.fail_next(fault, route='createPet', **options)
    assert pipelined_creates(server.port, 3) == b''
    wait_until(lambda: not server.app.gate.under_way)
    assert [(entry['status'], entry['fault']) for entry in server.requests] == [(None, fault)]
    assert len(server.app.store) == 13


@pytest.mark.slow  # a drip over its seconds, by design
@pytest.mark.parametrize('client', CLIENTS)
def test_slow_drips_the_real_body_over_its_seconds(server, client):
    server.fail_next('slow', seconds=5)
    with raises_named(RAISED['slow', client]):
        # The head comes at once; the gaps between the body's pieces are 0.5 s.
        CLIENTS[client](server, timeout=0.25)
    wait_until(lambda: server.requests)
    assert server.requests[-1]['fault'] == 'slow'  # the drip timed it out, not a slow machine
    server.fail_next('slow', seconds=0.05)
    assert CLIENTS[client](server) == (200, json.loads(server.app.store.list_json(20)))


def hung_client(server) -> tuple[threading.Thread, list]:
    """A client in a thread, held by a 60-second hang; what it met goes in the list."""
    server.fail_next('hang', seconds=60)
    outcome: list = []
    client = threading.Thread(target=lambda: outcome.append(
        pytest.raises(requests.ConnectionError, with_requests, server, timeout=30)))
    client.start()
    wait_until(lambda: server.requests)  # a hang is journalled before it holds the worker
    return client, outcome


def test_a_hang_is_released_by_reset(server):
    client, outcome = hung_client(server)
    server.reset()
    client.join(timeout=10)
    assert outcome and not client.is_alive()
    wait_until(lambda: not server.app.gate.under_way)  # the worker is free


def test_a_slow_answer_under_way_at_a_reset_is_cut_short_and_its_pet_is_gone(server):
    server.fail_next('slow', seconds=60, route='createPet')
    with httpx.stream('POST', server.url + '/pets', headers=server.headers, timeout=30,
                      json={'name': 'Slowpoke', 'categoryId': 1}, **PLAIN_HTTP) as response:
        received = b''
        with pytest.raises(httpx.RemoteProtocolError):  # closed before its Content-Length
            for chunk in response.iter_raw():
                received += chunk
                server.reset()  # after its first piece
    assert response.status_code == 201 and len(received) < int(response.headers['Content-Length'])
    assert server.app.store.list_json(20) == '[]' and server.requests == []


def test_a_hang_ends_at_its_bound_with_no_response(server):
    server.fail_next('hang', seconds=0.05)
    with pytest.raises(requests.ConnectionError):
        with_requests(server, timeout=30)
    wait_until(lambda: server.requests)  # recorded once the held worker lets go
    assert (server.requests[0]['status'], server.requests[0]['fault']) == (None, 'hang')


def test_a_hang_is_released_by_stop():
    with stub.serve() as server:
        client, outcome = hung_client(server)
    client.join(timeout=10)
    assert outcome and not client.is_alive()


@pytest.mark.parametrize('fault', ['drop', 'reset', 'truncate', 'malformed', 'hang', 503])
def test_every_fault_fires_after_the_key_is_checked(server, fault):
    server.fail_next(fault)
    response = requests.get(server.url + '/pets', timeout=5)
    assert (response.status_code, response.json()['code']) == (401, 'unauthorized')
    assert [entry['fault'] for entry in server.requests] == [None]
    assert server.app.faults.take_unused() == [  # still queued, for the next request
        f'{fault!r} for any operation: times 1 of 1 left']


def test_after_lets_matching_requests_through_first(server):
    server.fail_next(503, route='listPets', after=2)
    statuses = [requests.get(server.url + path, headers=server.headers, timeout=5).status_code
                for path in ('/pets', '/pets/1', '/pets', '/pets', '/pets')]
    assert statuses == [200, 200, 200, 503, 200]


def test_each_fault_counts_its_own_after_and_times_against_the_requests_it_matches(server):
    server.fail_next(503, after=2)
    server.fail_next(500, route='createPet')
    statuses = [requests.post(server.url + '/pets', json=REX, headers=server.headers,
                              timeout=5).status_code for _ in range(4)]
    assert statuses == [500, 201, 503, 201]


@pytest.mark.parametrize('fault, cut', [('truncate', True), ('malformed', False)])
def test_a_fault_that_alters_the_answer_alters_an_error_too_and_is_spent(server, fault, cut):
    server.fail_next(fault)
    with httpx.stream('GET', server.url + '/pets/999', headers=server.headers, timeout=5,
                      **PLAIN_HTTP) as response:
        received = b''
        with contextlib.suppress(httpx.RemoteProtocolError):
            for chunk in response.iter_raw():
                received += chunk
    length = int(response.headers['Content-Length'])
    assert (response.status_code, len(received) < length) == (404, cut)
    with pytest.raises(json.JSONDecodeError):
        json.loads(received)
    assert with_requests(server, path='/pets/999')[0] == 404  # whole: the fault was spent
    assert [entry['fault'] for entry in server.requests] == [fault, None]


@pytest.mark.slow
def test_a_retrying_client_waits_out_retry_after_and_succeeds(server):
    server.fail_next(503, retry_after=1, route='createPet')
    session = requests.Session()
    session.mount('http://', HTTPAdapter(max_retries=Retry(
        total=2, status_forcelist=[429, 503], allowed_methods=None,
        respect_retry_after_header=True)))
    response = session.post(server.url + '/pets', json=REX, headers=server.headers, timeout=5)
    assert response.status_code == 201
    first, second = server.requests
    assert (first['status'], first['fault'], second['status']) == (503, 503, 201)
    assert second['time'] - first['time'] >= 1


@pytest.mark.parametrize('status', [429, 503])
def test_retry_after_goes_with_429_and_503(server, status):
    server.fail_next(status, retry_after=7)
    response = httpx.get(server.url + '/pets', headers=server.headers, **PLAIN_HTTP)
    assert (response.status_code, response.headers['Retry-After']) == (status, '7')
    assert set(response.json()) == {'code', 'message', 'status'}


def test_an_admin_fault_takes_retry_after_and_after(server):
    client = webtest.TestApp(server.app)
    client.post_json('/__admin/faults', {'fault': 429, 'retry_after': 2, 'after': 1},
                     headers=AUTH, status=201)
    client.get('/v1/pets', headers=AUTH, status=200)
    assert client.get('/v1/pets', headers=AUTH, status=429).headers['Retry-After'] == '2'


def test_the_journal_keeps_the_order_of_arrival_when_a_fault_closes_the_connection(server):
    for _ in range(20):
        server.fail_next('reset', route='listPets')
        with pytest.raises(requests.ConnectionError):
            with_requests(server)
        assert with_requests(server, path='/pets/1')[0] == 200
    wait_until(lambda: len(server.requests) == 40)
    assert [entry['operation'] for entry in server.requests] == ['listPets', 'getPet'] * 20
    assert [entry['fault'] for entry in server.requests] == ['reset', None] * 20


def test_a_fault_says_where_it_came_from(server):
    server.fail_next(502)
    assert with_requests(server)[1]['message'] == 'Bad Gateway (a fault queued on the stub)'


def test_the_access_log_tells_a_reset_from_a_drop():
    lines = []
    app = stub.create_stub(access_log=lines.append)
    with stub.StubServer(app) as server:
        for fault in ('drop', 'reset'):
            app.fail_next(fault)
            with pytest.raises(requests.ConnectionError):
                with_requests(server)
    assert [line.split()[5] for line in lines] == ['dropped', 'reset']


def test_a_hanging_request_is_in_the_journal_while_it_hangs(server):
    server.fail_next('hang', route='createPet')
    with pytest.raises(requests.ReadTimeout):
        requests.post(server.url + '/pets', json=REX, headers=server.headers, timeout=0.1)
    wait_until(lambda: server.requests)
    assert (server.requests[0]['fault'], server.requests[0]['status']) == ('hang', None)
    server.assert_called('createPet', json=REX)
    with pytest.raises(AssertionError, match='createPet was called once'):
        server.assert_not_called('createPet')


# -- delays -------------------------------------------------------------------------------

def recorded_waits(app: stub.StubApp) -> list[float]:
    """The seconds each hold asks for, held for none: a delay's draws, without the waiting."""
    waits = []

    def hold(seconds, exchange):
        waits.append(seconds)
        return False
    app.gate.hold = hold  # type: ignore[method-assign]  # counted, not held
    return waits


def test_every_call_s_delay_and_a_route_s_add_up_once_the_key_is_accepted():
    app = stub.create_stub()
    waits = recorded_waits(app)
    client = make_client(app)
    app.set_delay(0.5)
    app.set_delay(0.25, route='createPet')
    client.get('/v1/pets')
    client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1}, status=201)
    client.get('/v1/pets/1', headers={'Authorization': 'Bearer wrong'}, status=401)
    client.get('/v1/nowhere', status=404)
    client.get('/v1/openapi.json')
    assert waits == [0.5, 0.75]
    assert app.settings()['delays'] == [{'seconds': 0.5, 'route': None},
                                        {'seconds': 0.25, 'route': 'createPet'}]


def test_a_delay_for_one_route_holds_that_operations_calls_only():
    app = stub.create_stub()
    waits = recorded_waits(app)
    client = make_client(app)
    app.set_delay(0.25, route='createPet')
    client.get('/v1/pets')
    client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1}, status=201)
    client.get('/v1/pets/1', headers={'Authorization': 'Bearer wrong'}, status=401)
    assert waits == [0.25]
    app.set_delay(0, route='createPet')
    client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1}, status=201)
    assert waits == [0.25] and app.settings()['delays'] == []


def test_no_delay_holds_nothing():
    app = stub.create_stub()
    waits = recorded_waits(app)
    app.delay = 0.5
    app.delay = 0
    make_client(app).get('/v1/pets')
    assert waits == [] and app.delay == 0 and app.settings()['delays'] == []
