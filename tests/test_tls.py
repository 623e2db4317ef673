"""HTTPS (--tls, serve(tls=True)): the same promises and faults as over plain HTTP, as requests,
httpx and raw TLS sockets meet them; the handshake never holds the server; a plain HTTP request
is told to use https://."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import ssl
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import requests
import trustme

import petstore_stub as stub
from conftest import (
    AUTH,
    KEY,
    StubProcess,
    allow_open_files,
    gone_pid,
    port_of,
    ten_times,
    wait_until,
)
from test_faults import CLOSING, raised_as_documented, raises_named
from test_server import PIPELINED_LISTS, exchange

pytest_plugins = ['pytester']


@pytest.fixture(scope='module')
def server():
    with stub.serve(tls=True) as server:
        yield server


@pytest.fixture(autouse=True)
def fresh(server):
    server.reset()
    server.load_fixtures()
    yield
    server.check()


def with_requests(server, path: str = '/pets', timeout: float = 5, **options):
    response = requests.get(server.url + path, headers=server.headers, timeout=timeout,
                            verify=str(server.ca_file), **options)
    return response.status_code, response.json()


def with_httpx(server, path: str = '/pets', timeout: float = 5, **options):
    response = httpx.get(server.url + path, headers=server.headers, timeout=timeout,
                         verify=server.ssl_context(), **options)
    return response.status_code, response.json()


CLIENTS = {'requests': with_requests, 'httpx': with_httpx}


def tls_socket(server, name: str = 'localhost') -> ssl.SSLSocket:
    connection = socket.create_connection(('127.0.0.1', server.port), timeout=5)
    return server.ssl_context().wrap_socket(connection, server_hostname=name)


def answer(connection: socket.socket) -> bytes:
    """All the connection receives until its peer closes it."""
    received = b''
    while chunk := connection.recv(65536):
        received += chunk
    return received


# -- trust ---------------------------------------------------------------------------------------

@pytest.mark.parametrize('client', CLIENTS)
def test_a_client_that_trusts_the_ca_file_is_served_over_https(server, client):
    assert server.url.startswith('https://127.0.0.1:')
    assert server.ca_file.read_text().startswith(f'written_by: petstore-stub pid {os.getpid()}\n'
                                                 '-----BEGIN CERTIFICATE-----')
    assert CLIENTS[client](server) == (200, json.loads(server.app.store.list_json(20)))


def test_a_client_that_does_not_trust_the_ca_refuses_the_stub_and_others_are_still_served(server):
    with pytest.raises(requests.exceptions.SSLError, match='CERTIFICATE_VERIFY_FAILED'):
        requests.get(server.url + '/pets', headers=server.headers, timeout=5)
    with pytest.raises(httpx.ConnectError, match='CERTIFICATE_VERIFY_FAILED'):
        httpx.get(server.url + '/pets', headers=server.headers, timeout=5)
    assert with_requests(server)[0] == 200


@pytest.mark.parametrize('name', ['localhost', '127.0.0.1'])
def test_the_certificate_is_for_the_loopback_names(server, name):
    with tls_socket(server, name) as connection:
        connection.sendall(b'GET /v1/pets/1 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n'
                           b'Connection: close\r\n\r\n' % (name.encode(), KEY.encode()))
        assert answer(connection).startswith(b'HTTP/1.1 200 OK\r\n')


def test_the_certificate_is_for_ipv6_loopback_too():
    try:
        socket.create_server(('::1', 0), family=socket.AF_INET6).close()
    except OSError:
        pytest.skip('no IPv6 loopback here')
    with stub.serve(tls=True, host='::1') as server:
        assert server.url.startswith('https://[::1]:')
        response = requests.get(server.url + '/pets', headers=server.headers, timeout=5,
                                verify=str(server.ca_file))
        assert response.status_code == 200


def test_an_allowed_host_is_named_in_the_certificate_and_no_other_name_is():
    with stub.serve(tls=True, allowed_hosts=['pets.local']) as server:
        with tls_socket(server, 'pets.local') as connection:
            connection.sendall(b'GET /v1/pets HTTP/1.1\r\nHost: pets.local\r\nAuthorization: '
                               b'Bearer %s\r\nConnection: close\r\n\r\n' % KEY.encode())
            assert answer(connection).startswith(b'HTTP/1.1 200 OK\r\n')
        with pytest.raises(ssl.SSLCertVerificationError, match="'evil.example'"):
            tls_socket(server, 'evil.example')


def test_a_client_that_refuses_the_certificate_is_in_the_access_log_with_openssl_s_reason():
    lines = []
    with stub.StubServer(stub.create_stub(access_log=lines.append), tls=stub.Tls()) as server:
        with pytest.raises(ssl.SSLCertVerificationError):
            ssl.create_default_context().wrap_socket(
                socket.create_connection(('127.0.0.1', server.port), timeout=5),
                server_hostname='localhost')
        wait_until(lambda: lines)
    assert lines[0].endswith(' 127.0.0.1 TLS handshake refused (TLSV1_ALERT_UNKNOWN_CA)')


def test_the_ca_file_is_removed_when_the_server_stops():
    with stub.serve(tls=True) as server:
        ca_file = server.ca_file
        assert ca_file.is_file()
    assert not ca_file.exists()


def test_the_ca_key_is_never_written_and_each_server_has_its_own_ca(server):
    with stub.serve(tls=True) as other:
        assert other.ca_file.read_text() != server.ca_file.read_text()
        assert 'PRIVATE KEY' not in other.ca_file.read_text()
        with pytest.raises(requests.exceptions.SSLError):  # one stub's CA vouches for no other
            requests.get(other.url + '/pets', headers=other.headers, verify=str(server.ca_file),
                         timeout=5)


# -- the faults, as over plain HTTP --------------------------------------------------------------

# What each client raises, by fault, as docs/testing.md says: as over plain HTTP but for one,
# since Python's ssl module reports a reset inside TLS as an end of file, so httpx raises what it
# raises for a drop.
RAISED = raised_as_documented(over_https=True)


@pytest.mark.parametrize('fault, client', CLOSING)
def test_each_fault_raises_what_the_client_raises_for_it_over_https(server, fault, client):
    server.fail_next(fault, route='listPets')
    with raises_named(RAISED[fault, client]):
        CLIENTS[client](server, timeout=0.05 if fault == 'hang' else 5)
    wait_until(lambda: server.requests)
    assert server.requests[-1]['fault'] == fault  # met: a hang's timeout is not a slow machine's
    assert CLIENTS[client](server) == (200, json.loads(server.app.store.list_json(20)))


class Wire:
    """A TLS connection whose records the test moves to and from the TCP socket itself, to see
    how the stub ends it: a reset, an end of file, or TLS's own close_notify first."""

    def __init__(self, server) -> None:
        self.raw = socket.create_connection(('127.0.0.1', server.port), timeout=5)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = server.ssl_context().wrap_bio(self.incoming, self.outgoing,
                                                 server_hostname='localhost')
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.raw.sendall(self.outgoing.read())
                self.incoming.write(self.raw.recv(65536))
        self.raw.sendall(self.outgoing.read())

    def send(self, data: bytes) -> None:
        self.tls.write(data)
        self.raw.sendall(self.outgoing.read())

    def ending(self) -> tuple[str, bytes]:
        """How the stub ends the connection, and what it sent before."""
        received = b''
        with self.raw:
            while True:
                try:
                    if not (data := self.tls.read(65536)):  # TLS's own end
                        return 'close_notify', received
                    received += data
                    continue
                except ssl.SSLWantReadError:
                    pass
                except ssl.SSLEOFError:
                    return 'end of file', received
                try:
                    data = self.raw.recv(65536)
                except ConnectionResetError:
                    return 'reset', received
                if data:
                    self.incoming.write(data)
                else:
                    self.incoming.write_eof()


LIST = b'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n' % KEY.encode()


@pytest.mark.parametrize('fault, ends', [
    (None, 'close_notify'),
    ('reset', 'reset'),
    ('drop', 'end of file'),
])
def test_an_answer_ends_with_close_notify_a_drop_without_and_a_reset_is_a_tcp_reset(
        server, fault, ends):
    if fault is not None:
        server.fail_next(fault)
    wire = Wire(server)
    wire.send(LIST + b'Connection: close\r\n\r\n')
    how, received = wire.ending()
    assert how == ends
    assert received.startswith(b'HTTP/1.1 200 OK\r\n') if fault is None else received == b''


@pytest.mark.slow  # a drip over its seconds, by design
def test_slow_drips_the_whole_body_over_its_seconds_over_https(server):
    def listed() -> bytes:
        with httpx.stream('GET', server.url + '/pets', headers=server.headers, timeout=5,
                          verify=server.ssl_context()) as response:
            return response.read()
    alone = ten_times(listed)
    server.fail_next('slow', seconds=0.3)
    started = time.monotonic()
    body = listed()
    assert 0.25 < time.monotonic() - started < 0.3 + alone
    assert json.loads(body) == json.loads(server.app.store.list_json(20))


@pytest.mark.parametrize('client', [requests, httpx])
def test_a_status_fault_keeps_its_error_body_and_retry_after_over_https(server, client):
    server.fail_next(503, retry_after=2)
    trust = {'verify': str(server.ca_file)} if client is requests else {
        'verify': server.ssl_context()}
    response = client.get(server.url + '/pets', headers=server.headers, timeout=5, **trust)
    assert (response.status_code, response.headers['Retry-After']) == (503, '2')
    assert response.json()['code'] == 'service_unavailable'


# -- plain HTTP to the HTTPS port; the Error body; the Host check; the admin API ------------------

@pytest.mark.parametrize('request_bytes', [
    b'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\n\r\n',
    b'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\n{"a":',
    b'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Length: 500\r\n\r\n{"a":',
    b'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n',
    b'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nX: ' + b'x' * 300_000 + b'\r\n\r\n',
    b'GET /v1/pets HTTP/1.7\r\n\r\n',
    b'NOT HTTP AT ALL\r\n\r\n',
], ids=['a GET', 'a POST', 'a body still to come', 'a coding', 'headers too large',
        'a bad version', 'not HTTP'])
def test_plain_http_sent_to_the_https_port_gets_a_400_saying_to_use_https(server, request_bytes):
    status, headers, body = exchange(server.port, request_bytes)  # then the stub closes
    assert (status, headers['Connection']) == (400, 'close')
    assert json.loads(body) == {
        'code': 'bad_request', 'status': 400,
        'message': 'this port speaks HTTPS: send the request to https://, not http://'}
    assert server.requests[-1]['status'] == 400
    assert server.store.get_json(14) is None  # nothing stored


@pytest.mark.parametrize('first_bytes', [
    bytes.fromhex('15030300020228'),  # a TLS alert
    bytes.fromhex('802e0103010015'),  # an SSLv2 hello
    bytes(range(200, 256)),
], ids=['a TLS alert', 'an SSLv2 hello', 'bytes'])
def test_bytes_neither_http_nor_a_tls_handshake_are_closed_at_once(server, first_bytes):
    received = b''
    with socket.create_connection(('127.0.0.1', server.port), timeout=5) as connection:
        connection.sendall(first_bytes)
        with contextlib.suppress(ConnectionResetError):  # closed with the bytes unread
            received = answer(connection)  # a TimeoutError if the stub waited
    assert received == b''


def test_a_client_asking_for_http_meets_the_400_not_a_hang(server):
    response = requests.get(server.url.replace('https://', 'http://') + '/pets',
                            headers=server.headers, timeout=5)
    assert response.status_code == 400 and 'https://' in response.json()['message']


@pytest.mark.parametrize('request_bytes, status, code', [
    (b'GET /v1/pets HTTP/1.2\r\nHost: localhost\r\n\r\n', 505, 'http_version_not_supported'),
    (b'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n'
     b'Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'bad_request'),
    (b'GET /v1/pets HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n', 421,
     'misdirected_request'),
], ids=['a version', 'length and chunked', 'a foreign Host'])
def test_a_request_the_server_refuses_gets_the_error_body_over_https(server, request_bytes,
                                                                      status, code):
    with tls_socket(server) as connection:
        connection.sendall(request_bytes)
        head, _, body = answer(connection).partition(b'\r\n\r\n')
    assert head.partition(b' ')[2].startswith(b'%d ' % status)
    assert json.loads(body)['code'] == code


def test_the_admin_api_is_served_over_https_and_the_documents_name_https(server):
    response = requests.post(server.url.removesuffix('/v1') + '/__admin/faults',
                             json={'fault': 503}, headers=server.headers,
                             verify=str(server.ca_file), timeout=5)
    assert response.status_code == 201
    assert with_requests(server)[0] == 503
    index = requests.get(server.url.removesuffix('/v1') + '/', verify=str(server.ca_file),
                         timeout=5, headers={'Accept': 'application/json'}).json()
    assert index['base_url'] == server.url
    description = requests.get(server.url + '/openapi.json', verify=str(server.ca_file),
                               timeout=5).json()
    assert description['servers'][0]['url'] == server.url


# -- what TLS holds in its records ---------------------------------------------------------------

def test_requests_pipelined_in_one_record_are_all_answered_in_order(server):
    with tls_socket(server) as connection:
        connection.sendall(b''.join(
            b'GET /v1/pets/%d HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n%s\r\n'
            % (pet_id, KEY.encode(), b'Connection: close\r\n' if pet_id == 3 else b'')
            for pet_id in (1, 2, 3)))
        received = answer(connection)
    assert received.count(b'HTTP/1.1 200 OK\r\n') == 3
    assert re.findall(rb'\{"id": (\d)', received) == [b'1', b'2', b'3']


@pytest.mark.slow  # it waits out a send timeout of 1 s, or reads for seconds
def test_a_large_answer_reaches_a_client_that_reads_slowly_whole(server):
    for _ in range(200):  # a journal of about 800 KB
        requests.post(server.url + '/pets', data='x' * 4000, verify=str(server.ca_file),
                      headers={**server.headers, 'Content-Type': 'application/json'}, timeout=5)
    connection = socket.socket()
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the stub must wait
    connection.settimeout(5)
    connection.connect(('127.0.0.1', server.port))
    with server.ssl_context().wrap_socket(connection, server_hostname='localhost') as connection:
        connection.sendall(b'GET /__admin/requests HTTP/1.1\r\nHost: localhost\r\n'
                           b'Authorization: Bearer %s\r\nConnection: close\r\n\r\n' % KEY.encode())
        received = b''
        while chunk := connection.recv(1024):
            received += chunk
            time.sleep(0.0002)
    head, _, body = received.partition(b'\r\n\r\n')
    assert int(head.split(b'Content-Length: ')[1].split(b'\r\n')[0]) == len(body) > 800_000
    assert len(json.loads(body)) == 200


def test_a_large_body_in_many_records_is_read_whole(server):
    name = 'R' * 100_000
    response = requests.post(server.url + '/pets', json={'name': name, 'categoryId': 1},
                             headers=server.headers, verify=str(server.ca_file), timeout=5)
    assert response.status_code == 201 and response.json()['name'] == name


# -- no handshake holds the server ---------------------------------------------------------------

def client_hello(context: ssl.SSLContext) -> bytes:
    """The first bytes a TLS client sends."""
    tls = context.wrap_bio(ssl.MemoryBIO(), outgoing := ssl.MemoryBIO(),
                           server_hostname='localhost')
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_a_silent_connection_and_a_handshake_sent_a_byte_at_a_time_block_nobody(server):
    hello = client_hello(server.ssl_context())
    silent = socket.create_connection(('127.0.0.1', server.port), timeout=5)
    slow = socket.create_connection(('127.0.0.1', server.port), timeout=5)
    alone = ten_times(lambda: with_requests(server))
    with silent, slow:
        for byte in hello[:len(hello) // 2]:
            slow.send(bytes([byte]))
        started = time.monotonic()
        assert with_requests(server)[0] == 200
        assert time.monotonic() - started < alone  # at once, as with nobody else connected


@pytest.mark.slow  # it waits out a send timeout of 1 s, or reads for seconds
def test_a_client_that_stops_reading_is_closed_after_the_send_timeout_over_https():
    app = stub.create_stub()
    for category in range(17):  # a list answer of 17 MB, more than the kernel holds for it
        app.add_pet('x' * 1_000_000, category)
    with stub.StubServer(app, tls=stub.Tls(), send_timeout=1) as server:
        with tls_socket(server) as stalled:
            stalled.sendall(PIPELINED_LISTS)  # and never reads
            wait_until(lambda: len(app.requests) == 1)
            wait_until(lambda: not server.connections)  # closed: it took nothing


@pytest.mark.slow  # the idle timeout waited out, by design
def test_a_handshake_never_finished_is_closed_at_the_idle_timeout():
    hello = client_hello(ssl.create_default_context())
    with stub.StubServer(stub.create_stub(), tls=stub.Tls(), idle_timeout=0.3) as server:
        with socket.create_connection(('127.0.0.1', server.port), timeout=10) as stalled:
            stalled.sendall(hello[:len(hello) // 2])  # and never the rest
            started = time.monotonic()
            assert stalled.recv(1) == b''  # closed, with no alert
            assert time.monotonic() - started < 3  # ten times the idle timeout: not this client's


def test_a_stop_closes_a_connection_whose_handshake_is_under_way():
    hello = client_hello(ssl.create_default_context())
    server = stub.StubServer(stub.create_stub(), tls=stub.Tls()).start()
    with socket.create_connection(('127.0.0.1', server.port), timeout=10) as stalled:
        stalled.sendall(hello[:len(hello) // 2])
        wait_until(lambda: server.connections)
        server.stop()
        assert not server.connections  # its thread ended, not left in the handshake for 120 s
        answer(stalled)  # closed (after an alert), not left to this client's timeout


@pytest.mark.slow
def test_a_new_client_is_served_while_500_idle_and_100_slow_handshakes_are_open():
    allow_open_files(1024, '600 connections')
    server = StubProcess('--tls', '--db', ':memory:', '--quiet')
    port = port_of(server.url)
    ca_file = server.banner[1].split('--cacert ')[1].split()[0]
    crowd = []
    try:
        alone = ten_times(lambda: requests.get(server.url + '/pets', headers=AUTH, verify=ca_file,
                                               timeout=10))
        for _ in range(500):  # a TCP connection, and never a ClientHello
            crowd.append(socket.create_connection(('127.0.0.1', port), timeout=10))
        hello = client_hello(ssl.create_default_context())
        for _ in range(100):  # a handshake begun, a byte at a time, and never finished
            slow = socket.create_connection(('127.0.0.1', port), timeout=10)
            crowd.append(slow)
        for at in range(len(hello) // 2):
            for slow in crowd[500:]:
                slow.send(hello[at:at + 1])
        # Each of the 600 taken from the listen queue, into a thread of its own (Linux).
        tasks = Path(f'/proc/{server.process.pid}/task')
        wait_until(lambda: len(list(tasks.iterdir())) > 600)
        started = time.monotonic()
        response = requests.get(server.url + '/pets', headers=AUTH, verify=ca_file, timeout=10)
        waited = time.monotonic() - started
        assert response.status_code == 200 and waited < alone, (waited, alone)  # at once
    finally:
        for connection in crowd:
            connection.close()
        assert server.stop(signal.SIGTERM) == 0


# -- the command line, and pytest ----------------------------------------------------------------

@pytest.mark.slow
def test_the_command_line_serves_https_and_a_clean_stop_removes_the_ca_file(tmp_path):
    ready, ca_file, db = tmp_path / 's.json', tmp_path / 'ca.pem', tmp_path / 'pets.json'
    process = StubProcess('--tls', '--tls-ca-file', str(ca_file), '--ready-file', str(ready),
                          '--db', str(db), '--allow-host', 'pets.local')
    try:
        document = json.loads(ready.read_text())
        assert document['url'] == process.url and process.url.startswith('https://127.0.0.1:')
        assert document['ca_file'] == str(ca_file)
        assert f'curl --cacert {ca_file} ' in process.banner[1]
        with tls_socket_to(port_of(process.url), ca_file, 'pets.local') as connection:
            body = b'{"name": "Rex", "categoryId": 1}'
            connection.sendall(b'POST /v1/pets HTTP/1.1\r\nHost: pets.local\r\nAuthorization: '
                               b'Bearer %s\r\nContent-Type: application/json\r\nContent-Length: '
                               b'%d\r\n\r\n%s' % (KEY.encode(), len(body), body))
            assert connection.recv(65536).startswith(b'HTTP/1.1 201 Created\r\n')
            # a connection still open, its handshake done: the stop is clean all the same
            assert process.stop(signal.SIGTERM) == 0
    finally:
        if process.process.poll() is None:
            process.stop(signal.SIGKILL)
    assert not ready.exists() and not ca_file.exists()
    assert json.loads(db.read_text())['pets']['1']['name'] == 'Rex'


def tls_socket_to(port: int, ca_file, name: str) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(ca_file))
    return context.wrap_socket(socket.create_connection(('127.0.0.1', port), timeout=5),
                               server_hostname=name)


@pytest.fixture(scope='module')
def own_certificate(tmp_path_factory) -> dict:
    """A certificate of one's own for 127.0.0.1, as mkcert makes one: its CA, key and chain."""
    folder = tmp_path_factory.mktemp('own')
    ca = trustme.CA()
    certificate = ca.issue_cert('127.0.0.1', 'localhost')
    ca.cert_pem.write_to_path(folder / 'ca.pem')
    certificate.cert_chain_pems[0].write_to_path(folder / 'cert.pem')
    certificate.private_key_pem.write_to_path(folder / 'key.pem')
    trustme.CA().issue_cert('localhost').private_key_pem.write_to_path(folder / 'other-key.pem')
    return {name: str(folder / f'{name}.pem') for name in ('ca', 'cert', 'key', 'other-key')}


def test_a_certificate_of_your_own_is_served_and_the_ready_file_names_no_ca(own_certificate,
                                                                            tmp_path):
    ready = tmp_path / 's.json'

    def while_serving(server):
        response = requests.get(server.url + '/pets', headers=AUTH, timeout=5,
                                verify=own_certificate['ca'])
        return response.status_code, json.loads(ready.read_text())['ca_file'], server.ca_file

    assert stub.main(['--tls-cert', own_certificate['cert'], '--tls-key', own_certificate['key'],
                      '--port', '0', '--db', ':memory:', '--quiet', '--ready-file', str(ready)],
                     server_class=ServingWhile(while_serving)) == 0
    assert SEEN == [(200, None, None)]


def test_a_certificate_and_its_key_read_from_pipes_are_taken(own_certificate):
    pipes = []
    for name in ('cert', 'key'):  # as a shell's <(...) gives them
        reading, writing = os.pipe()
        os.write(writing, Path(own_certificate[name]).read_bytes())
        os.close(writing)
        pipes.append(reading)
    try:
        assert stub.main(['--tls-cert', f'/dev/fd/{pipes[0]}', '--tls-key', f'/dev/fd/{pipes[1]}',
                          '--port', '0', '--db', ':memory:', '--quiet'],
                         server_class=ServingWhile(lambda server: requests.get(
                             server.url + '/pets', headers=AUTH, timeout=5,
                             verify=own_certificate['ca']).status_code)) == 0
    finally:
        for reading in pipes:
            os.close(reading)
    assert SEEN == [200]


def test_a_key_that_is_not_the_certificates_is_refused_in_one_line(own_certificate, capsys):
    with pytest.raises(SystemExit) as exited:
        stub.main(['--tls-cert', own_certificate['cert'], '--tls-key',
                   own_certificate['other-key'], '--port', '0'])
    assert exited.value.code == 2
    assert f'cannot load the certificate {own_certificate["cert"]} (KEY_VALUES_MISMATCH)' in (
        capsys.readouterr().err)


def test_a_key_with_a_passphrase_is_refused_in_one_line_without_asking_for_it(
        own_certificate, capsys, tmp_path):
    from cryptography.hazmat.primitives import serialization
    key = serialization.load_pem_private_key(Path(own_certificate['key']).read_bytes(), None)
    (tmp_path / 'locked.pem').write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b'secret')))
    with pytest.raises(SystemExit) as exited:
        stub.main(['--tls-cert', own_certificate['cert'], '--tls-key', str(tmp_path / 'locked.pem'),
                   '--port', '0'])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert 'its key has a passphrase, which the stub cannot ask for; give it without' in err
    assert 'Traceback' not in err


@pytest.mark.parametrize('left', ['', 'stale'])
def test_an_empty_file_or_one_a_stub_now_gone_left_is_written_over_and_removed(tmp_path, left):
    ready, ca_file, gone = tmp_path / 's.json', tmp_path / 'ca.pem', gone_pid()
    ready.write_text(f'{{"written_by": "petstore-stub pid {gone}", "url": "https://127.0.0.1:9/v1"}}'
                     if left else '')
    ca_file.write_text(f'written_by: petstore-stub pid {gone}\n-----BEGIN CERTIFICATE-----\nMIIB'
                       if left else '')

    def while_serving(server):
        return json.loads(ready.read_text())['ca_file'], ca_file.read_text()

    assert stub.main(['--tls', '--tls-ca-file', str(ca_file), '--ready-file', str(ready),
                      '--port', '0', '--db', ':memory:', '--quiet'],
                     server_class=ServingWhile(while_serving)) == 0
    ((named, written),) = SEEN
    assert named == str(ca_file) and written.startswith(
        f'written_by: petstore-stub pid {os.getpid()}\n-----BEGIN CERTIFICATE-----\nMII')
    assert not ready.exists() and not ca_file.exists()


def test_a_ca_file_that_cannot_be_written_stops_the_stub_before_its_banner(capsys):
    assert stub.main(['--tls', '--tls-ca-file', '/proc/self/ca.pem', '--port', '0', '--db',
                      ':memory:']) == 1
    out, err = capsys.readouterr()
    assert 'petstore-stub: cannot write /proc/self/ca.pem: ' in err and 'serving' not in out


def test_without_trustme_tls_says_in_one_line_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, 'trustme', None)  # as if not installed
    assert stub.main(['--tls', '--port', '0', '--db', ':memory:']) == 1
    assert capsys.readouterr().err == ("petstore-stub: HTTPS with a certificate the stub makes "
                                       "needs trustme: pip install 'petstore-stub[tls]'\n")
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'petstore-stub\[tls\]'"):
        with stub.serve(tls=True):
            pass


SEEN: list = []


def ServingWhile(what):
    """A StubServer class for main() that serves in a thread while ``what(server)`` runs, records
    what it returns in SEEN, and returns as if stopped."""
    class Serving(stub.StubServer):
        def serve_forever(self) -> None:
            thread = threading.Thread(target=super().serve_forever, daemon=True)
            thread.start()
            try:
                SEEN.append(what(self))
            finally:
                self.stop()
                thread.join(5)
    SEEN.clear()
    return Serving


@pytest.mark.slow  # a process of its own
def test_the_ini_option_serves_the_session_stub_over_https(pytester):
    pytester.makeini('[pytest]\npetstore_tls = true\n')
    pytester.makepyfile("""
        import requests

        def test_over_https(petstore_server):
            assert petstore_server.url.startswith('https://')
            response = requests.get(petstore_server.url + '/pets', verify=str(
                petstore_server.ca_file), headers=petstore_server.headers, timeout=5)
            assert response.status_code == 200
    """)
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=1)


def test_on_every_address_the_certificate_names_this_machine_and_the_address_it_reaches_from():
    names = stub.tls_names('0.0.0.0', [])
    assert names[0] == socket.gethostname() and '0.0.0.0' not in names
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(('192.0.2.1', 9))  # with no route, there is no such address to name
        assert probe.getsockname()[0] in names


def test_on_every_address_what_a_certificate_cannot_name_is_left_out(monkeypatch):
    monkeypatch.setattr(socket, 'gethostname', lambda: 'pet_store')
    monkeypatch.setattr(socket, 'getaddrinfo', lambda *arguments: [
        (socket.AF_INET6, socket.SOCK_DGRAM, 0, '', ('fe80::1%eth0', 0, 0, 2)),
        (socket.AF_INET, socket.SOCK_DGRAM, 0, '', ('10.0.0.7', 0))])
    names = stub.tls_names('0.0.0.0', [])
    assert 'pet_store' not in names and 'fe80::1%eth0' not in names and '10.0.0.7' in names
    assert stub.Tls(names).ca_pem is not None
    assert stub.tls_names('127.0.0.2', ['pets.local', 'fd00::1']) == [
        'pets.local', '[fd00::1]', '127.0.0.2']
