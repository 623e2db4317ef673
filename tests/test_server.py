"""The server and the HTTP protocol on real sockets: keep-alive, crowded sockets, a stop; raw
bytes, and each protocol error's Error body, CORS header, journal entry and access-log line."""

from __future__ import annotations

import contextlib
import email.utils
import gc
import http.client
import io
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

import pytest

import petstore_stub as stub
from conftest import (
    AUTH,
    JSON,
    JSON_HEADERS,
    StubProcess,
    allow_open_files,
    call,
    call_once,
    connect,
    port_of,
    wait_until,
)


@pytest.mark.slow  # it waits for the clock's next second
def test_the_date_header_is_the_second_each_answer_was_sent_in():
    with stub.serve() as server:
        connection = connect(server.url)
        for _ in range(2):
            before = int(time.time())
            connection.request('GET', urlsplit(server.url).path + '/pets', headers=AUTH)
            response = connection.getresponse()
            response.read()
            sent = email.utils.parsedate_to_datetime(response.getheader('Date')).timestamp()
            assert before <= sent <= time.time()
            wait_until(lambda second=before: int(time.time()) > second)  # the next in a later one
        connection.close()


def test_keep_alive_serves_several_requests_on_one_connection():
    with stub.serve() as server:
        connection = connect(server.url)
        path = urlsplit(server.url).path
        assert call(connection, 'POST', f'{path}/pets', {'name': 'Rex', 'categoryId': 1})[0] == 201
        first_socket = connection.sock
        for _ in range(3):
            assert call(connection, 'GET', f'{path}/pets')[0] == 200
            assert connection.sock is first_socket
        connection.close()


@pytest.mark.parametrize('method, path, headers', [
    pytest.param('POST', '/__admin/reset', JSON_HEADERS, id='a reset'),
    pytest.param('GET', '/favicon.ico', {}, id='the favicon'),
    pytest.param('OPTIONS', '/v1/pets', {'Origin': 'http://page.example',
                                         'Access-Control-Request-Method': 'POST'},
                 id='a preflight'),
])
def test_a_204_keeps_the_connection_for_the_next_request(method, path, headers):
    with stub.serve(cors=True) as server:
        connection = connect(server.url)
        connection.connect()
        first_socket = connection.sock
        for _ in range(2):
            connection.request(method, path, headers=headers)
            response = connection.getresponse()
            assert (response.status, response.read()) == (204, b'')
            assert response.getheader('Connection') is None
            assert call(connection, 'GET', '/v1/pets')[0] == 200
            assert connection.sock is first_socket
        connection.close()


def test_a_204_closes_the_connection_a_client_asks_to_close():
    with stub.serve() as server:
        connection = connect(server.url)
        connection.request('POST', '/__admin/reset', headers={**JSON_HEADERS, 'Connection': 'close'})
        response = connection.getresponse()
        assert (response.status, response.getheader('Connection')) == (204, 'close')
        assert response.will_close


EXPECTING = (b'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n'
             b'Content-Length: 32\r\nExpect: 100-continue\r\n')


def test_a_body_behind_expect_100_continue_is_asked_for_only_with_a_key_the_stub_takes():
    with stub.serve() as server:
        with socket.create_connection(('127.0.0.1', server.port), timeout=10) as connection:
            connection.sendall(EXPECTING + b'Authorization: Bearer wrong\r\n\r\n')
            answer = connection.makefile('rb').read()  # all of it: the stub closes
        assert answer.startswith(b'HTTP/1.1 401 Unauthorized\r\n')
        assert b'100 Continue' not in answer and answer.endswith(b'"status": 401}\n')
        with socket.create_connection(('127.0.0.1', server.port), timeout=10) as connection:
            connection.sendall(EXPECTING + b'Authorization: Bearer petstore-demo-key\r\n\r\n')
            assert connection.recv(100) == b'HTTP/1.1 100 Continue\r\n\r\n'
            connection.sendall(b'{"name": "Rex", "categoryId": 1}')
            assert connection.recv(100).startswith(b'HTTP/1.1 201 Created\r\n')
        assert [entry['status'] for entry in server.requests] == [401, 201]


def test_expect_100_continue_without_a_body_is_answered_at_once():
    with stub.serve() as server:
        with socket.create_connection(('127.0.0.1', server.port), timeout=10) as connection:
            connection.sendall(b'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\n'
                               b'Authorization: Bearer petstore-demo-key\r\nContent-Length: 0\r\n'
                               b'Expect: 100-continue\r\n\r\n'
                               b'GET /v1/pets/1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n'
                               b'Authorization: Bearer petstore-demo-key\r\n\r\n')
            answer = connection.makefile('rb').read()
    assert answer.startswith(b'HTTP/1.1 200 OK\r\n') and b'100 Continue' not in answer
    assert b'HTTP/1.1 404 Not Found\r\n' in answer  # the next request, read as it was sent


def test_concurrent_creates_get_distinct_ids_that_survive_a_restart(tmp_path):
    db = tmp_path / 'pets.json'
    acknowledged = []

    def client(number: int, url: str) -> None:
        connection = connect(url)
        for count in range(40):
            status, pet = call(connection, 'POST', '/v1/pets', {'name': f'c{number}-{count}',
                                                                'categoryId': number})
            assert status == 201
            acknowledged.append(pet)
        connection.close()

    with stub.serve(db=db) as server:
        threads = [threading.Thread(target=client, args=(n, server.url)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len({pet['id'] for pet in acknowledged}) == 320
    # Stopped cleanly: the TinyDB file alone holds every pet.
    assert [path.name for path in tmp_path.iterdir()] == ['pets.json']
    on_disk = json.loads(db.read_text())['pets']
    assert len(on_disk) == 320
    for pet in acknowledged:
        assert on_disk[str(pet['id'])] == {k: v for k, v in pet.items() if k != 'id'}


@pytest.mark.slow
@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_a_slow_response_in_flight_when_the_stub_stops_is_finished_not_cut(signum):
    server = StubProcess('--db', ':memory:', '--admin', '--fixtures')
    connection = connect(server.url)
    connection.request('POST', '/__admin/faults', json.dumps({'fault': 'slow', 'seconds': 30}),
                       JSON_HEADERS)
    connection.getresponse().read()
    connection.request('GET', '/v1/pets?limit=100', headers=JSON_HEADERS)
    response = connection.getresponse()  # its head and a first piece; the rest drips
    assert server.stop(signum) == 0
    body = response.read()
    connection.close()
    assert len(body) == int(response.getheader('Content-Length'))
    assert len(json.loads(body)) == 13


# -- crowded sockets -------------------------------------------------------------------

@pytest.mark.slow
def test_a_new_client_is_served_while_500_idle_and_100_slow_connections_are_open():
    """Before, 100 open connections (waitress's limit) made every new client wait for good."""
    allow_open_files(1024, '600 connections')
    server = StubProcess('--db', ':memory:', '--quiet')
    port = port_of(server.url)
    crowd = []
    try:
        for _ in range(500):
            crowd.append(socket.create_connection(('127.0.0.1', port), timeout=10))
        for _ in range(100):  # slowloris: a request whose headers never end
            slow = socket.create_connection(('127.0.0.1', port), timeout=10)
            slow.sendall(b'GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Slow: a\r\n')
            crowd.append(slow)
        connection = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
        connection.request('GET', '/v1/pets', headers=AUTH)
        assert connection.getresponse().status == 200
        connection.close()
    finally:
        for sock in crowd:
            sock.close()
        server.stop(signal.SIGTERM)


@pytest.mark.slow
def test_past_the_connection_limit_a_new_connection_waits_for_one_to_close():
    allow_open_files(2200, '2,000 sockets')
    with stub.serve() as server:
        crowd = [socket.create_connection(('127.0.0.1', server.port), timeout=10)
                 for _ in range(stub.CONNECTION_LIMIT)]
        wait_until(lambda: len(server.connections) == stub.CONNECTION_LIMIT)
        with socket.create_connection(('127.0.0.1', server.port), timeout=0.5) as waiting:
            waiting.sendall(GET_PETS + b'\r\n')  # taken by the kernel's backlog, not the stub
            with pytest.raises(TimeoutError):
                waiting.recv(1)
            assert len(server.connections) == stub.CONNECTION_LIMIT  # it waited for a slot
            crowd.pop().close()
            waiting.settimeout(10)
            assert waiting.recv(12) == b'HTTP/1.1 200'
        for connection in crowd:
            connection.close()


# -- raw bytes on a socket ------------------------------------------------------------

GET_PETS = (b'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\n'
            b'Authorization: Bearer petstore-demo-key\r\n')


def post_with(headers: bytes, payload: bytes = b'') -> bytes:
    return (b'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\n'
            b'Authorization: Bearer petstore-demo-key\r\n'
            b'Content-Type: application/json\r\n' + headers + b'\r\n' + payload)


RAW_REQUESTS = [
    # (request bytes, status, code)
    pytest.param(b'GARBAGE\r\n\r\n', 400, 'bad_request', id='a request line of one word'),
    pytest.param(b'get /v1/pets HTTP/1.1\r\nHost: localhost\r\n\r\n', 400, 'bad_request',
                 id='a lowercase method'),
    pytest.param(b'GE T /v1/pets HTTP/1.1\r\nHost: localhost\r\n\r\n', 400, 'bad_request',
                 id='a space in the method'),
    pytest.param(b'GET /v1/pets HTTP/1.1 extra\r\nHost: localhost\r\n\r\n', 400, 'bad_request',
                 id='four words'),
    pytest.param(post_with(b'Content-Length: abc\r\n'), 400, 'bad_request',
                 id='Content-Length abc'),
    pytest.param(post_with(b'Content-Length: -1\r\n'), 400, 'bad_request',
                 id='Content-Length -1'),
    pytest.param(post_with(b'Content-Length: +2\r\n', b'{}'), 400, 'bad_request',
                 id='Content-Length +2'),
    pytest.param(post_with(b'Content-Length: 2\r\nContent-Length: 3\r\n', b'{} '), 400,
                 'bad_request', id='two Content-Lengths'),
    pytest.param(post_with(b'Transfer-Encoding: chunked\r\n', b'zz\r\n{}\r\n0\r\n\r\n'), 400,
                 'bad_request', id='a bad chunk size'),
    pytest.param(post_with(b'Transfer-Encoding: gzip\r\n', b'{}'), 501, 'not_implemented',
                 id='Transfer-Encoding gzip'),
    pytest.param(b'GET /v1/pe\xffts HTTP/1.1\r\nHost: localhost\r\n\r\n', 400, 'bad_request',
                 id='a raw non-ASCII byte in the path'),
    pytest.param(GET_PETS + b'X-Big: ' + b'a' * 300_000 + b'\r\n\r\n', 431, 'header_too_large',
                 id='a 300 KB header'),
    pytest.param(GET_PETS + b'No colon here\r\n\r\n', 400, 'bad_request',
                 id='a header line without a colon'),
    pytest.param(GET_PETS + b'Bad Name: x\r\n\r\n', 400, 'bad_request', id='a space in a name'),
    pytest.param(GET_PETS + b'X-Nul: a\x00b\r\n\r\n', 400, 'bad_request', id='a NUL in a value'),
    pytest.param(b'GET /v1/pets HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n', 400, 'bad_request',
                 id='a bare LF'),
    pytest.param(GET_PETS + b'X-Ctl: \x01\r\n\r\n', 400, 'bad_request', id='a control byte'),
    pytest.param(post_with(b'Transfer-Encoding: chunked\r\n', b'FFFFFFFF\r\n{"name'), 413,
                 'payload_too_large', id='a chunk declared past the body limit'),
    pytest.param(post_with(b'Content-Length: 100000000\r\n'), 413, 'payload_too_large',
                 id='a 100 MB Content-Length'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'/v1/pets%2F1') + b'\r\n', 404, 'not_found',
                 id='an encoded slash'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'//v1/pets') + b'\r\n', 404, 'not_found',
                 id='a leading empty segment'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'/v1/./pets') + b'\r\n', 404, 'not_found',
                 id='a dot segment'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'/v1/pets/%2E%2E') + b'\r\n', 400,
                 'invalid_parameter', id='an encoded dot-dot as the petId'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'/v1/pets/1%2F2') + b'\r\n', 400,
                 'invalid_parameter', id='an encoded slash in the petId'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'/v1/pe%FFts') + b'\r\n', 404, 'not_found',
                 id='an encoded byte that is not UTF-8'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'/v1/pets?limit=%FF') + b'\r\n', 400,
                 'invalid_parameter', id='a query not UTF-8'),
    pytest.param(post_with(b'Content-Length: 4\r\nTransfer-Encoding: chunked\r\n',
                           b'2\r\n{}\r\n0\r\n\r\n'), 400, 'bad_request',
                 id='Content-Length and Transfer-Encoding'),
    pytest.param(post_with(b'Transfer-Encoding: chunked\r\n', b'2\r\n{}\r\n0\r\n\r\n')
                 .replace(b'HTTP/1.1', b'HTTP/1.0'), 400, 'bad_request',
                 id='Transfer-Encoding in HTTP/1.0'),
    pytest.param(GET_PETS.replace(b'Host: localhost\r\n', b'') + b'\r\n', 400, 'bad_request',
                 id='HTTP/1.1 without Host'),
    pytest.param(GET_PETS + b'Host: y\r\n\r\n', 400, 'bad_request', id='two Hosts'),
    pytest.param(GET_PETS.replace(b'Host: localhost', b'Host:') + b'\r\n', 400, 'bad_request',
                 id='an empty Host'),
    pytest.param(GET_PETS.replace(b'Host: localhost', b'Host: x/y') + b'\r\n', 400, 'bad_request',
                 id='a Host with a path'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'/v1/pets#top') + b'\r\n', 400, 'bad_request',
                 id='a fragment'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'/v1/pets\x1b[31m') + b'\r\n', 400,
                 'bad_request', id='a raw escape byte in the path'),
    pytest.param(GET_PETS.replace(b'HTTP/1.1', b'HTTP/2.0') + b'\r\n', 505,
                 'http_version_not_supported', id='HTTP/2.0'),
    pytest.param(GET_PETS.replace(b'HTTP/1.1', b'HTTP/9.9') + b'\r\n', 505,
                 'http_version_not_supported', id='HTTP/9.9'),
    pytest.param(GET_PETS.replace(b'HTTP/1.1', b'HTTP/1.2') + b'\r\n', 505,
                 'http_version_not_supported', id='HTTP/1.2'),
    pytest.param(post_with(b'Transfer-Encoding: \r\nContent-Length: 2\r\n', b'{}'), 400,
                 'bad_request', id='an empty Transfer-Encoding and Content-Length'),
    pytest.param(post_with(b'Transfer-Encoding: ,\r\nContent-Length: 2\r\n', b'{}'), 400,
                 'bad_request', id='a Transfer-Encoding of a comma and Content-Length'),
    pytest.param(post_with(b'transfer-ENCODING: \r\n'), 400, 'bad_request',
                 id='an empty Transfer-Encoding'),
    pytest.param(b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 505, 'http_version_not_supported',
                 id="HTTP/2's preface"),
    pytest.param(post_with(b'Transfer-Encoding: chunked, chunked\r\n', b'2\r\n{}\r\n0\r\n\r\n'),
                 400, 'bad_request', id='chunked twice in one header'),
    pytest.param(post_with(b'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n',
                           b'2\r\n{}\r\n0\r\n\r\n'), 400, 'bad_request',
                 id='chunked in two headers'),
    pytest.param(post_with(b'Transfer-Encoding: chunked, gzip\r\n', b'{}'), 400, 'bad_request',
                 id='chunked, then a coding'),
    pytest.param(post_with(b'Transfer-Encoding: gzip, chunked\r\n', b'2\r\n{}\r\n0\r\n\r\n'),
                 501, 'not_implemented', id='a coding, then chunked'),
    pytest.param(GET_PETS.replace(b'GET', b'FOO') + b'\r\n', 400, 'bad_request',
                 id='a method HTTP does not define'),
    pytest.param(GET_PETS.replace(b'GET ', b'GET  ') + b'\r\n', 400, 'bad_request',
                 id='two spaces after the method'),
    pytest.param(GET_PETS.replace(b' HTTP/1.1', b'') + b'\r\n', 505, 'http_version_not_supported',
                 id='HTTP/0.9, no version'),
    pytest.param(GET_PETS + b'X: a\rb\r\n\r\n', 400, 'bad_request', id='a bare CR in a value'),
    pytest.param(post_with(b'Transfer-Encoding: chunked\r\n', b'0' * 5000 + b'4000001\r\n{"n'),
                 413, 'payload_too_large', id='a chunk size past the limit, after 5,000 zeros'),
    pytest.param(post_with(b'Transfer-Encoding: chunked\r\n', b'2;' + b'e' * 300_000), 413,
                 'payload_too_large', id='a chunk size line of 300 KB'),
    pytest.param(post_with(b'Transfer-Encoding: chunked\r\n', b'2\r\n{}\r\n0\r\n'
                           + b'X-T: a\r\n' * 40_000 + b'\r\n'), 413, 'payload_too_large',
                 id='trailers of 320 KB'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'http:///v1/pets') + b'\r\n', 400, 'bad_request',
                 id='an absolute target with no host'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'ftp://localhost/v1/pets') + b'\r\n', 400,
                 'bad_request', id='an absolute target not http'),
    pytest.param(GET_PETS.replace(b'/v1/pets', b'*') + b'\r\n', 400, 'bad_request',
                 id='* for a GET'),
    pytest.param(b'CONNECT localhost:443 HTTP/1.1\r\nHost: localhost\r\n\r\n', 400, 'bad_request',
                 id='CONNECT'),
    pytest.param(GET_PETS.replace(b'Host: localhost', b'Host: localhost:99999') + b'\r\n', 400,
                 'bad_request', id='a Host port past 65535'),
    pytest.param(post_with(b'Content-Length: 2\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n', b'{}'),
                 400, 'bad_request', id='an upgrade with a body'),
    pytest.param(GET_PETS + b'X: 1\r\n folded\r\n\r\n', 400, 'bad_request', id='a folded line'),
]


def send_all(connection: socket.socket, raw: bytes) -> None:
    with contextlib.suppress(OSError):
        connection.sendall(raw)
        connection.shutdown(socket.SHUT_WR)


def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes; the status, headers and body of the answer."""
    with socket.create_connection(('127.0.0.1', port), timeout=10) as connection:
        # The server may answer (and close) before it has read it all: send beside reading.
        sender = threading.Thread(target=send_all, args=(connection, raw))
        sender.start()
        data = b''
        with contextlib.suppress(ConnectionResetError):
            while chunk := connection.recv(65536):
                data += chunk
        sender.join()
    head, _, payload = data.partition(b'\r\n\r\n')
    status_line, *header_lines = head.decode('latin-1').split('\r\n')
    headers = dict(line.split(': ', 1) for line in header_lines)
    return int(status_line.split()[1]), headers, payload


@pytest.fixture(scope='module')
def server():
    with stub.serve(fixtures=True) as server:
        yield server


@pytest.fixture(scope='module')
def any_host_server():
    """A stub on loopback without the Host check, as on another ``--host`` (``0.0.0.0``)."""
    with stub.serve(fixtures=True, allowed_hosts=None) as server:
        yield server


@pytest.mark.parametrize('raw, status, code', RAW_REQUESTS)
def test_a_malformed_request_gets_the_error_body_in_json_and_changes_nothing(server, raw,
                                                                             status, code):
    before = server.app.store.list_json(100)
    got, headers, payload = exchange(server.port, raw)
    assert got == status
    assert headers['Content-Type'] == JSON
    error = json.loads(payload)
    assert set(error) == {'code', 'message', 'status'}
    assert (error['status'], error['code']) == (status, code)
    assert server.app.store.list_json(100) == before


def test_a_request_smuggled_in_an_http_1_0_body_is_never_served(server):
    before = server.app.store.list_json(100)
    smuggled = post_with(b'Content-Length: 36\r\n', b'{"name": "smuggled", "categoryId": 1}'[:36])
    raw = (b'POST /v1/pets HTTP/1.0\r\nHost: localhost\r\nConnection: keep-alive\r\n'
           b'Authorization: Bearer petstore-demo-key\r\nContent-Type: application/json\r\n'
           b'Transfer-Encoding: chunked\r\n\r\n' + smuggled)
    status, headers, payload = exchange(server.port, raw)
    assert (status, headers['Connection']) == (400, 'close')
    assert json.loads(payload)['code'] == 'bad_request'  # one answer, then the connection closed
    assert server.app.store.list_json(100) == before


def test_http_1_0_without_host_is_still_served(server):
    status, _, payload = exchange(server.port, b'GET /v1/pets?limit=1 HTTP/1.0\r\n'
                                  b'Authorization: Bearer petstore-demo-key\r\n\r\n')
    assert (status, len(json.loads(payload))) == (200, 1)


@pytest.mark.parametrize('host', [
    'pet_store:8080', 'localhost:', 'my~host', 'ex%41mple.com', '[fe80::1%25eth0]:8080',
    '[::1]:8080', 'pets.example.com.', 'PETS.EXAMPLE.COM', '127.0.0.1',
])
def test_a_valid_host_header_is_served_where_any_host_is_answered(any_host_server, host):
    raw = GET_PETS.replace(b'Host: localhost', f'Host: {host}'.encode())
    status, _, payload = exchange(any_host_server.port, raw + b'Connection: close\r\n\r\n')
    assert (status, len(json.loads(payload))) == (200, 13)


def test_a_request_that_is_not_valid_http_is_journalled_as_refused_as_malformed(server):
    exchange(server.port, GET_PETS.replace(b'/v1/pets', b'/v1/pets?status=sold out') + b'\r\n')
    entry = server.requests[-1]
    assert (entry['method'], entry['path'], entry['query'], entry['status']) == (
        'GET', '/v1/pets', 'status=sold out', 400)
    assert entry['error']['code'] == 'bad_request'
    assert stub.is_refused_as_malformed(entry)  # so the guard fails a test that sent it


# -- the wire: framing, keep-alive, the target's host ---------------------------------

def answers(port: int, raw: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """Each answer to ``raw``, in order, until the stub closes the connection."""
    with socket.create_connection(('127.0.0.1', port), timeout=10) as connection:
        connection.sendall(raw)
        stream, found = connection.makefile('rb'), []
        while status_line := stream.readline():
            headers = dict(line.decode().rstrip('\r\n').split(': ', 1)
                           for line in iter(stream.readline, b'\r\n'))
            found.append((int(status_line.split()[1]), headers,
                          stream.read(int(headers.get('Content-Length', 0)))))
    return found


def test_pipelined_requests_are_answered_in_order_and_the_last_closes(server):
    raw = b''.join(GET_PETS.replace(b'/v1/pets', path) + b'\r\n' for path in (
        b'/v1/pets/2', b'/v1/pets/999', b'/v1/pets?limit=1')) + GET_PETS.replace(
            b'/v1/pets', b'/v1/pets/3') + b'Connection: close\r\n\r\n'
    found = answers(server.port, raw)
    assert [status for status, _, _ in found] == [200, 404, 200, 200]
    pets = [json.loads(body) for _, _, body in found]
    assert (pets[0]['id'], len(pets[2]), pets[3]['id']) == (2, 1, 3)
    assert found[-1][1]['Connection'] == 'close'


def test_http_1_0_keeps_its_connection_only_when_it_asks_to():
    with stub.serve(fixtures=True) as server:
        kept = (b'GET /v1/pets/1 HTTP/1.0\r\nConnection: keep-alive\r\n'
                b'Authorization: Bearer petstore-demo-key\r\n\r\n')
        found = answers(server.port, kept * 2 + kept.replace(b'keep-alive', b'close'))
        assert [(status, headers.get('Connection')) for status, headers, _ in found] == [
            (200, 'Keep-Alive'), (200, 'Keep-Alive'), (200, 'close')]
        with socket.create_connection(('127.0.0.1', server.port), timeout=10) as connection:
            connection.sendall(kept)
            assert connection.recv(17) == b'HTTP/1.1 200 OK\r\n'  # its own (RFC 9110, 6.2)
        assert len(answers(server.port, kept.replace(b'Connection: keep-alive\r\n', b'') * 2)) == 1


@pytest.mark.parametrize('name', ['Authori_zation', 'X_Request_Id', 'X-Request_Id'])
def test_a_header_whose_name_holds_an_underscore_is_left_out(name):
    with stub.serve(fixtures=True, allowed_hosts=None) as server:
        raw = (f'GET /v1/pets/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{name}: '
               'Bearer petstore-demo-key\r\n').encode()
        status, _, _ = exchange(server.port, raw + b'\r\n')
        entry = server.requests[-1]
    assert status == 401  # no key: an Authori_zation is no Authorization
    assert not any('_' in header or header == name.replace('_', '-')
                   for header in entry['headers'])


def test_a_trailer_is_no_header(server):
    raw = (b'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n'
           b'Transfer-Encoding: chunked\r\n\r\n21\r\n{"name":"Trailer","categoryId":1}\r\n0\r\n'
           b'Authorization: Bearer petstore-demo-key\r\n\r\n')
    before = server.app.store.list_json(100)
    status, _, payload = exchange(server.port, raw)
    assert (status, json.loads(payload)['code']) == (401, 'unauthorized')
    assert server.app.store.list_json(100) == before


@pytest.mark.parametrize('value', [b'Bearer petstore-demo-key\xa0',
                                   b'\x85Bearer petstore-demo-key'])
def test_a_header_value_loses_spaces_and_tabs_around_it_and_nothing_else(server, value):
    raw = GET_PETS.replace(b'Bearer petstore-demo-key', value) + b'Connection: close\r\n\r\n'
    assert exchange(server.port, raw)[0] == 401


def test_a_header_sent_twice_reaches_the_app_as_one_joined_by_a_comma(server):
    exchange(server.port, GET_PETS + b'X-Trace: a\r\nX-Trace: b\r\nConnection: close\r\n\r\n')
    assert server.requests[-1]['headers']['X-Trace'] == 'a, b'


@pytest.mark.parametrize('target, host, status, named', [
    pytest.param(b'http://evil.example/v1/pets', b'localhost', 421, 'request target',
                 id='a foreign target host'),
    pytest.param(b'http://localhost/v1/pets', b'evil.example', 421, 'Host header',
                 id='a foreign Host header too'),
    pytest.param(b'http://localhost:1/v1/pets', b'127.0.0.1', 200, None, id='both loopback'),
])
def test_an_absolute_target_and_the_host_header_must_both_name_a_host_answered(
        server, target, host, status, named):
    raw = GET_PETS.replace(b'/v1/pets', target).replace(b'Host: localhost', b'Host: ' + host)
    assert exchange(server.port, raw + b'Connection: close\r\n\r\n')[0] == status
    entry = server.requests[-1]
    assert entry['headers']['Host'] == host.decode()  # as sent
    if named:
        assert entry['error']['message'].startswith(f'the {named} names ')


def test_an_upgrade_is_answered_as_http_1_1_then_closed(server):
    raw = GET_PETS + b'Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n' + GET_PETS + b'\r\n'
    assert [status for status, _, _ in answers(server.port, raw)] == [200]


def test_a_body_past_the_spool_size_reaches_the_app_whole_from_a_file():
    with stub.serve() as server:
        name = 'n' * 700_000  # past 512 KiB: it waits in a temporary file, not in memory
        status, pet = call_once(server.url, 'POST', '/v1/pets', {'name': name, 'categoryId': 1})
    assert (status, pet['name']) == (201, name)


@pytest.mark.slow  # the idle timeout waited out, by design
def test_a_silent_connection_and_an_unfinished_head_are_closed_at_the_idle_timeout():
    app = stub.create_stub()
    with stub.StubServer(app, idle_timeout=0.3) as server:
        silent = socket.create_connection(('127.0.0.1', server.port), timeout=10)
        unfinished = socket.create_connection(('127.0.0.1', server.port), timeout=10)
        unfinished.sendall(b'GET /v1/pets HTTP/1.1\r\nHost: x\r\n')
        started = time.monotonic()
        assert (silent.recv(1), unfinished.recv(1)) == (b'', b'')  # closed, unanswered
        assert time.monotonic() - started < 3  # ten times the idle timeout: not this client's
        assert call_once(server.url, 'GET', '/v1/pets')[0] == 200
        silent.close()
        unfinished.close()


def test_a_port_just_served_on_is_taken_again_at_once():
    with stub.serve() as first:
        assert call_once(first.url, 'GET', '/v1/pets')[0] == 200  # a connection left in TIME_WAIT
    with stub.StubServer(stub.create_stub(), port=first.port) as second:
        assert call_once(second.url, 'GET', '/v1/pets')[0] == 200


@pytest.mark.slow  # a process of its own
def test_at_run_time_the_module_imports_only_the_standard_library_and_its_packages():
    code = ('import sys, urllib.request\n'
            'before = set(sys.modules)\n'
            'import petstore_stub as stub\n'
            'with stub.serve() as server:\n'
            '    request = urllib.request.Request(server.url + "/pets", headers=server.headers)\n'
            '    assert urllib.request.urlopen(request).status == 200\n'
            'print(*sorted({name.partition(".")[0] for name, module in sys.modules.items()\n'
            '               if name not in before and getattr(module, "__file__", None)}\n'
            '              - set(sys.stdlib_module_names)))')  # a file: not Cython's own
    found = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                           check=True).stdout.split()
    assert found == ['bottle', 'httptools', 'petstore_stub', 'tinydb']


# -- protocol errors: CORS, the access log ------------------------------------------

@pytest.fixture(scope='module')
def cors_server():
    """A fixture server on loopback, admin endpoints on, with --cors."""
    with stub.serve(fixtures=True, cors=True) as server:
        yield server


def test_a_protocol_error_lets_a_page_on_another_origin_read_it_with_cors():
    with stub.serve(cors=True) as server:
        status, headers, _ = exchange(server.port, b'GARBAGE\r\n\r\n')
    assert (status, headers['Access-Control-Allow-Origin']) == (400, '*')


@pytest.mark.parametrize('target', ['/__admin/reset', '/%5F%5Fadmin/reset',
                                    'http://127.0.0.1/__admin/reset'])
def test_a_protocol_error_on_an_admin_endpoint_carries_no_cors_header(cors_server, target):
    raw = f'POST {target} HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n'.encode()
    status, headers, _ = exchange(cors_server.port, raw)
    assert status == 400
    assert 'Access-Control-Allow-Origin' not in headers


def test_a_protocol_error_on_the_api_still_carries_the_cors_header(cors_server):
    raw = b'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n'
    assert exchange(cors_server.port, raw)[1]['Access-Control-Allow-Origin'] == '*'


def test_a_malformed_options_request_gets_its_400_with_cors_never_a_preflights_204(cors_server):
    raw = (b'OPTIONS /v1/pets HTTP/1.1\r\nHost: localhost\r\nOrigin: https://demo.example\r\n'
           b'Access-Control-Request-Method: POST\r\nContent-Length: abc\r\n\r\n')
    status, headers, payload = exchange(cors_server.port, raw)
    assert (status, json.loads(payload)['code']) == (400, 'bad_request')
    assert headers['Access-Control-Allow-Origin'] == '*'


def test_a_malformed_request_is_answered_and_journalled_at_once_whatever_the_delay():
    with stub.serve() as server:
        server.delay = 60  # an API request would wait a minute; the client waits 10 seconds
        status, _, payload = exchange(server.port, b'GARBAGE\r\n\r\n')
        assert (status, json.loads(payload)['code']) == (400, 'bad_request')
        assert [(entry['method'], entry['status']) for entry in server.requests] == [
            ('GARBAGE', 400)]


@pytest.mark.parametrize('target', ['/%5F%5Fadmin/reset', 'http://127.0.0.1/__admin/reset'])
def test_a_malformed_request_to_an_admin_endpoint_however_spelled_is_not_journalled(server,
                                                                                  target):
    before = len(server.requests)
    raw = f'POST {target} HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n'.encode()
    assert exchange(server.port, raw)[0] == 400
    assert len(server.requests) == before  # admin calls are never journalled, refused or not


def test_requests_refused_before_the_app_are_in_the_access_log_too():
    lines = []
    with stub.StubServer(stub.create_stub(access_log=lines.append)) as server:
        answers = [exchange(server.port, raw)[2] for raw in (
            b'GET / HTTP/1.1\r\nHost: x/y\r\nConnection: close\r\n\r\n',
            b'get /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n',
            b'GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ' + b'a' * 300_000 + b'\r\n\r\n')]
    assert lines[0].split(' ', 3)[3].startswith('GET / 400 ')
    assert lines[1].split(' ', 3)[3] == 'get /v1/pets 400 -'  # the target as sent, as for any
    assert lines[2].split(' ', 3)[3] == 'GET /v1/pets 431 -'  # its headers unread, its line known
    assert json.loads(answers[2])['message'] == 'the request headers are over 262144 bytes in all'


@pytest.mark.parametrize('target', ['/__admin%2Freset', '/%5F%5Fadmin/reset%2F'])
def test_a_path_that_is_an_admin_path_only_once_decoded_waits_at_the_fence_as_an_api_path(target):
    with stub.serve() as server:
        entered, enter = [], server.gate.enter
        server.gate.enter = lambda exchange: entered.append(exchange) or enter(exchange)
        raw = f'POST {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n'.encode()
        status, _, payload = exchange(server.port, raw + b'Authorization: Bearer '
                                      + server.api_key.encode() + b'\r\n\r\n')
        assert (status, json.loads(payload)['code']) == (404, 'not_found')
        assert len(entered) == 1  # a reset's cut holds it, as the path as sent is an API path
        assert [entry['path'] for entry in server.requests] == [target]


# -- a client that stops reading -------------------------------------------------------

PIPELINED_LISTS = (b'GET /v1/pets?limit=20 HTTP/1.1\r\nHost: 127.0.0.1\r\n'
                   b'Authorization: Bearer petstore-demo-key\r\n\r\n') * 3


@contextlib.contextmanager
def serving_large_answers(send_timeout: float):
    """A server whose list answers are 17 MB each, more than the kernel holds for a client that
    reads none."""
    app = stub.create_stub()
    for category in range(17):
        app.add_pet('x' * 1_000_000, category)
    with stub.StubServer(app, send_timeout=send_timeout) as server:
        yield server


@pytest.fixture
def large_answers():
    """Large answers, with a send timeout of 1 s."""
    with serving_large_answers(1) as server:
        yield server


@pytest.mark.slow  # it waits out a send timeout of 1 s, or reads for seconds
def test_a_client_that_stops_reading_is_closed_after_the_send_timeout_and_others_are_served(
        large_answers):
    assert_stalled_client_is_closed(large_answers)


def test_a_send_timeout_under_a_microsecond_is_one_and_not_none():
    # SO_SNDTIMEO reads 0 as no timeout at all: 1e-7 s must not round down to it.
    with serving_large_answers(1e-7) as server:
        assert_stalled_client_is_closed(server)


def assert_stalled_client_is_closed(large_answers: stub.StubServer) -> None:
    with socket.create_connection(('127.0.0.1', large_answers.port), timeout=10) as stalled:
        stalled.sendall(PIPELINED_LISTS)  # and never reads
        wait_until(lambda: len(large_answers.requests) == 1)  # its answer waits for it
        assert call_once(large_answers.url, 'GET', '/v1/pets?limit=1')[0] == 200
        wait_until(lambda: not large_answers.connections)  # closed: it took nothing
        taken = 0
        with contextlib.suppress(ConnectionResetError):
            while chunk := stalled.recv(1 << 20):
                taken += len(chunk)
    assert taken < 17_000_000  # cut before its first answer was all sent


@pytest.mark.slow  # it waits out a send timeout of 1 s, or reads for seconds
def test_a_client_that_reads_slowly_and_steadily_gets_every_answer_whole(large_answers):
    # Read for 3 s at about 300 KB/s, slower than the kernel frees its buffer: for each second
    # of the send timeout, the client takes a few bytes only.
    with socket.create_connection(('127.0.0.1', large_answers.port), timeout=10) as slow:
        slow.sendall(PIPELINED_LISTS)
        taken = b''
        for _ in range(30):
            taken += slow.recv(32 << 10)
            time.sleep(0.1)
        stream = io.BufferedReader(Joined(taken, slow.makefile('rb', buffering=0)))
        for _ in range(3):
            head = b''.join(iter(stream.readline, b'\r\n'))
            pets = json.loads(stream.read(int(re.search(rb'Content-Length: (\d+)', head)[1])))
            assert [len(pet['name']) for pet in pets] == [1_000_000] * 17


def test_a_stop_closes_the_file_holding_a_body_whose_end_has_not_come(monkeypatch):
    unclosed = []  # a file garbage-collected open reports a ResourceWarning here
    monkeypatch.setattr(sys, 'unraisablehook', unclosed.append)
    with stub.serve() as server, socket.create_connection(
            ('127.0.0.1', server.port), timeout=10) as sending:
        sending.sendall(post_with(b'Content-Length: 2000000\r\n', b'x' * 1_000_000))
        wait_until(lambda: any(getattr(connection.request, 'size', 0) == 1_000_000  # in a file
                               for connection in list(server.connections)))
    gc.collect()
    assert [str(report.exc_value) for report in unclosed] == []

class Joined(io.RawIOBase):
    """What was read already, then the rest of ``raw``."""

    def __init__(self, taken: bytes, raw) -> None:
        self._taken, self._raw = io.BytesIO(taken), raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        return self._taken.readinto(buffer) or self._raw.readinto(buffer)
