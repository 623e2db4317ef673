"""Safe on your machine: what a web page can do to a stub running on loopback.

A page on another site can point a name of its own at 127.0.0.1 (DNS rebinding): its
requests then carry that name in Host, and the stub refuses them. With --cors, pages
on any origin may call the API, never the admin endpoints. The page at / and the
documents tell the browser to run nothing injected into them, and to frame them nowhere.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import socket

import pytest
import webtest

import petstore_stub as stub
from conftest import AUTH, JSON, KEY, send

FOREIGN_ORIGIN = 'https://evil.example'

#: Host headers a rebinding page sends: its own name, whatever the address behind it.
FOREIGN_HOSTS = [
    pytest.param('evil.example:{port}', id='evil.example with the port'),
    pytest.param('evil.example', id='evil.example'),
    pytest.param('127.0.0.1.evil.example:{port}', id='a name that begins as 127.0.0.1'),
    pytest.param('localhost.evil.example:{port}', id='a name that begins as localhost'),
    pytest.param('LOCALHOST.EVIL.EXAMPLE', id='the same in capitals'),
    pytest.param('192.168.1.5:{port}', id='an address outside 127/8'),
    pytest.param('0.0.0.0:{port}', id='the any address'),
    pytest.param('[::2]:{port}', id='an IPv6 address that is not loopback'),
    pytest.param('localhost.:{port}', id='localhost with a trailing dot'),
]

#: What a rebinding page would try: each operation, each admin endpoint, each document,
#: and the preflights. (method, path, body, extra headers)
TARGETS = [
    pytest.param('GET', '/v1/pets', None, {}, id='listPets'),
    pytest.param('POST', '/v1/pets', {'name': 'Evil', 'categoryId': 1}, {}, id='createPet'),
    pytest.param('GET', '/v1/pets/1', None, {}, id='getPet'),
    pytest.param('POST', '/__admin/reset', None, {}, id='admin reset'),
    pytest.param('GET', '/__admin/requests', None, {}, id='admin requests'),
    pytest.param('POST', '/__admin/fixtures', None, {}, id='admin fixtures'),
    pytest.param('POST', '/__admin/faults', {'fault': 503}, {}, id='admin faults'),
    pytest.param('POST', '/__admin/chaos', {'rate': 1}, {}, id='admin chaos'),
    pytest.param('GET', '/', None, {'Accept': 'text/html'}, id='the page'),
    pytest.param('GET', '/', None, {}, id='the JSON index'),
    pytest.param('GET', '/v1/openapi.json', None, {}, id='the OpenAPI description'),
    pytest.param('GET', '/favicon.ico', None, {}, id='the favicon'),
    pytest.param('OPTIONS', '/v1/pets', None, {'Access-Control-Request-Method': 'POST'},
                 id='a preflight to the API'),
    pytest.param('OPTIONS', '/__admin/reset', None, {'Access-Control-Request-Method': 'POST'},
                 id='a preflight to the admin endpoints'),
]


def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str]]:
    """Send raw bytes that the server refuses as not valid HTTP; the status and headers."""
    with socket.create_connection(('127.0.0.1', port), timeout=10) as connection:
        connection.sendall(raw)
        data = b''
        while chunk := connection.recv(65536):  # the server closes after a refusal
            data += chunk
    status_line, *lines = data.partition(b'\r\n\r\n')[0].decode('latin-1').split('\r\n')
    return int(status_line.split()[1]), dict(line.split(': ', 1) for line in lines)


def assert_refused(status: int, headers: dict[str, str], payload: bytes, host: str) -> None:
    assert status == 421
    assert headers['content-type'] == JSON
    error = json.loads(payload)
    assert (error['status'], error['code']) == (421, 'misdirected_request')
    assert repr(host) in error['message'] and 'Host header' in error['message']
    assert '--allow-host' in error['message']
    assert not [name for name in headers if name.startswith('access-control-')]


@pytest.fixture(scope='module')
def server():
    """A fixture server on loopback, admin endpoints on, with --cors."""
    with stub.serve(fixtures=True, cors=True) as server:
        yield server


# -- the Host check, on a real socket -----------------------------------------------

@pytest.mark.parametrize('method, path, body, headers', TARGETS)
@pytest.mark.parametrize('host', FOREIGN_HOSTS)
def test_a_foreign_host_on_loopback_gets_421_and_reads_changes_and_resets_nothing(
        server, host, method, path, body, headers):
    server.app.faults.clear()
    before, journal = server.app.store.list_json(100), server.requests
    status, got, payload = send(server.port, method, path, host, body, headers)
    assert_refused(status, got, payload, host.format(port=server.port))
    assert server.app.store.list_json(100) == before  # nothing stored, nothing reset
    assert server.app.faults.listed() == {'faults': [], 'chaos': None}
    after = server.requests
    assert after[:len(journal)] == journal  # the journal was not cleared
    if path.startswith('/__admin/') or path == '/favicon.ico':  # never journalled
        assert after == journal
    else:  # journalled as refused, like any refused request
        (entry,) = after[len(journal):]
        assert (entry['method'], entry['path'], entry['status']) == (method, path, 421)
        assert entry['error']['code'] == 'misdirected_request'


@pytest.mark.parametrize('admin, cors', [
    pytest.param(False, False, id='neither'), pytest.param(True, False, id='--admin'),
    pytest.param(False, True, id='--cors'), pytest.param(True, True, id='--admin --cors'),
])
def test_a_rebinding_page_reads_stores_and_resets_nothing_with_or_without_admin_and_cors(
        admin, cors):
    app = stub.create_stub(admin=admin, cors=cors, allowed_hosts=())
    app.add_pet('Rex', 1)
    with stub.StubServer(app) as server:
        assert send(server.port, 'GET', '/v1/pets')[0] == 200  # a request of this machine
        journal = app.requests
        for method, path, body in [('GET', '/v1/pets', None), ('GET', '/v1/pets/1', None),
                                   ('POST', '/v1/pets', {'name': 'Evil', 'categoryId': 1}),
                                   ('GET', '/__admin/requests', None),
                                   ('POST', '/__admin/reset', None),
                                   ('POST', '/__admin/fixtures', None)]:
            status, headers, payload = send(server.port, method, path, 'evil.example:{port}',
                                            body, {'Origin': f'http://evil.example:{server.port}'})
            assert_refused(status, headers, payload, f'evil.example:{server.port}')
            assert b'Rex' not in payload
        assert json.loads(app.store.list_json(100)) == [{'id': 1, 'name': 'Rex', 'categoryId': 1}]
        assert app.requests[:len(journal)] == journal
        # journalled as refused; the admin calls only where they are no admin endpoints
        refused = app.requests[len(journal):]
        assert [entry['status'] for entry in refused] == [421] * (3 if admin else 6)


@pytest.mark.parametrize('host', [
    'localhost', 'localhost:{port}', 'localhost:', 'LOCALHOST:{port}', 'LocalHost',
    '127.0.0.1', '127.0.0.1:{port}', '127.5.6.7:{port}', '127.255.255.254',
    '[::1]', '[::1]:{port}', '[0:0:0:0:0:0:0:1]:{port}',
])
def test_a_loopback_host_is_answered_with_or_without_its_port_in_any_case(server, host):
    status, _, payload = send(server.port, 'GET', '/v1/pets?limit=1', host)
    assert (status, len(json.loads(payload))) == (200, 1)


@pytest.mark.parametrize('client', ['http.client', 'requests', 'httpx'])
@pytest.mark.parametrize('name', ['127.0.0.1', 'localhost'])
def test_a_real_client_on_this_machine_is_answered(server, client, name):
    url = f'http://{name}:{server.port}/v1/pets?limit=1'
    if client == 'requests':
        import requests
        status = requests.get(url, headers=AUTH, timeout=10).status_code
    elif client == 'httpx':
        import httpx
        # verify=False: no CA certificates to load (25 ms) for a plain-HTTP URL.
        status = httpx.get(url, headers=AUTH, timeout=10, verify=False).status_code
    else:
        connection = http.client.HTTPConnection(name, server.port, timeout=10)
        connection.request('GET', '/v1/pets?limit=1', headers=AUTH)
        status = connection.getresponse().status
        connection.close()
    assert status == 200


@pytest.mark.parametrize('host, status', [
    pytest.param('pets.local:{port}', 200, id='an allowed name with the port'),
    pytest.param('PETS.Local', 200, id='an allowed name in capitals'),
    pytest.param('pet_store:8080', 200, id='a Compose service name, another port'),
    pytest.param('192.168.1.5:{port}', 200, id='an allowed address'),
    pytest.param('[fd00::1]:{port}', 200, id='an allowed IPv6 address'),
    pytest.param('localhost:{port}', 200, id='loopback names still'),
    pytest.param('pets.local.evil.example:{port}', 421, id='a name that begins as one'),
    pytest.param('other.local:{port}', 421, id='a name not given'),
])
def test_allowed_hosts_adds_names_to_the_loopback_ones(host, status):
    with stub.serve(allowed_hosts=['pets.local', 'pet_store', '192.168.1.5', 'FD00::1']) as server:
        assert send(server.port, 'GET', '/v1/pets', host)[0] == status


def test_serve_with_allowed_hosts_none_answers_any_host():
    with stub.serve(allowed_hosts=None) as server:
        assert send(server.port, 'GET', '/v1/pets', 'evil.example')[0] == 200


def test_a_refusal_is_in_the_access_log():
    lines = []
    with stub.StubServer(stub.create_stub(access_log=lines.append, allowed_hosts=())) as server:
        send(server.port, 'GET', '/v1/pets', 'evil.example')
    assert ' GET /v1/pets 421 ' in lines[0]


# -- the Host check, in-process and as settings --------------------------------------

def test_an_in_process_app_answers_any_host_unless_told():
    client = webtest.TestApp(stub.create_stub())
    client.authorization = ('Bearer', KEY)
    assert client.get('/v1/pets', extra_environ={'HTTP_HOST': 'api.example.com'}).status_int == 200


def test_webtest_sends_localhost_so_an_in_process_app_with_the_check_is_answered():
    client = webtest.TestApp(stub.create_stub(allowed_hosts=()))
    client.authorization = ('Bearer', KEY)
    assert client.get('/v1/pets').status_int == 200  # WebTest's Host is localhost:80
    refused = client.get('/v1/pets', extra_environ={'HTTP_HOST': 'evil.example'}, status=421)
    assert refused.json['code'] == 'misdirected_request'


def test_the_petstore_app_fixture_is_answered(petstore_app):
    assert petstore_app.get('/v1/pets').status_int == 200


@pytest.mark.parametrize('text, name', [
    pytest.param('pets.local', 'pets.local', id='a name'),
    pytest.param('PETS.Local', 'pets.local', id='in lower case'),
    pytest.param('pet_store', 'pet_store', id='a Compose service'),
    pytest.param('host-1.example', 'host-1.example', id='a hyphen inside'),
    pytest.param('192.168.1.5', '192.168.1.5', id='an IPv4 address'),
    pytest.param('fd00::1', '[fd00::1]', id='an IPv6 address, bracketed'),
    pytest.param('[FD00:0::1]', '[fd00::1]', id='an IPv6 address, in its short form'),
    pytest.param('a' * 63, 'a' * 63, id='a label of 63'),
])
def test_parse_allowed_host_gives_the_name_as_host_carries_it(text, name):
    assert stub.parse_allowed_host(text) == name


@pytest.mark.parametrize('text', [
    pytest.param('', id='empty'),
    pytest.param('pets.local:8080', id='with a port'),
    pytest.param('[::1]:8080', id='IPv6 with a port'),
    pytest.param('http://pets.local', id='a URL'),
    pytest.param('pets.local/v1', id='a path'),
    pytest.param('*', id='a wildcard'),
    pytest.param('*.example', id='a wildcard label'),
    pytest.param('-pets.local', id='a label starting with a hyphen'),
    pytest.param('pets..local', id='an empty label'),
    pytest.param('pets.local.', id='a trailing dot'),
    pytest.param(' pets.local', id='a space'),
    pytest.param('a' * 64, id='a label of 64'),
    pytest.param('[fe80::1%eth0]', id='a zone'),
    pytest.param('[pets.local]', id='a name in brackets'),
    pytest.param(None, id='not text'),
])
def test_parse_allowed_host_refuses_anything_but_a_name_or_address(text):
    with pytest.raises(ValueError, match='an allowed host is a host name'):
        stub.parse_allowed_host(text)


def test_create_stub_refuses_one_string_for_allowed_hosts():
    with pytest.raises(ValueError, match='give a list of host names'):
        stub.create_stub(allowed_hosts='pets.local')


# -- no CORS on the admin endpoints -----------------------------------------------------

@pytest.mark.parametrize('path', ['/__admin/reset', '/__admin/requests', '/__admin/fixtures',
                                  '/__admin/faults', '/__admin/chaos'])
def test_a_preflight_from_a_foreign_origin_to_an_admin_endpoint_is_not_allowed(server, path):
    status, headers, _ = send(server.port, 'OPTIONS', path, headers={
        'Origin': FOREIGN_ORIGIN, 'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type', 'Authorization': ''})
    assert status == 401  # a preflight carries no key
    assert not [name for name in headers if name.startswith('access-control-')]


def test_an_admin_call_with_the_key_carries_no_cors_headers(server):
    for method, path in [('GET', '/__admin/requests'), ('POST', '/__admin/reset')]:
        status, headers, _ = send(server.port, method, path, headers={'Origin': FOREIGN_ORIGIN})
        assert status in (200, 204)
        assert not [name for name in headers if name.startswith('access-control-')]


def test_with_cors_the_api_stays_open_to_any_origin(server):
    status, headers, _ = send(server.port, 'OPTIONS', '/v1/pets', headers={
        'Origin': FOREIGN_ORIGIN, 'Access-Control-Request-Method': 'POST'})
    assert (status, headers['access-control-allow-origin']) == (204, '*')
    assert 'Authorization' in headers['access-control-allow-headers']
    status, headers, _ = send(server.port, 'GET', '/v1/pets', headers={'Origin': FOREIGN_ORIGIN})
    assert (status, headers['access-control-allow-origin']) == (200, '*')


@pytest.mark.parametrize('target', ['/__admin/reset', '/%5F%5Fadmin/reset',
                                    'http://127.0.0.1/__admin/reset'])
def test_a_protocol_error_on_an_admin_endpoint_carries_no_cors_header(server, target):
    raw = f'POST {target} HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n'.encode()
    status, headers = exchange(server.port, raw)
    assert status == 400
    assert 'Access-Control-Allow-Origin' not in headers


def test_a_protocol_error_on_the_api_still_carries_the_cors_header(server):
    raw = b'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n'
    assert exchange(server.port, raw)[1]['Access-Control-Allow-Origin'] == '*'


# -- the headers of the page and the documents --------------------------------------------

def inline(page: str, tag: str) -> list[str]:
    return re.findall(rf'<{tag}>(.*?)</{tag}>', page, flags=re.DOTALL)


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_page_allows_only_its_own_origin_and_its_own_inline_code(server):
    status, headers, payload = send(server.port, 'GET', '/', headers={'Accept': 'text/html'})
    assert status == 200 and headers['content-type'].startswith('text/html')
    policy = dict(part.strip().split(' ', 1) for part in
                  headers['content-security-policy'].split(';'))
    page = payload.decode()
    assert policy['default-src'] == "'self'"
    assert policy['frame-ancestors'] == "'none'"
    assert policy['script-src'] == ' '.join(map(sha256_source, inline(page, 'script')))
    assert policy['style-src'] == ' '.join(map(sha256_source, inline(page, 'style')))
    assert (policy['object-src'], policy['base-uri']) == ("'none'", "'none'")
    assert 'unsafe' not in headers['content-security-policy']
    assert headers['x-content-type-options'] == 'nosniff'
    assert headers['referrer-policy'] == 'no-referrer'


@pytest.mark.parametrize('method, path, accept', [
    pytest.param('GET', '/', '*/*', id='the JSON index'),
    pytest.param('HEAD', '/', 'text/html', id='the page, HEAD'),
    pytest.param('GET', '/v1/openapi.json', '*/*', id='the OpenAPI description'),
    pytest.param('HEAD', '/v1/openapi.json', '*/*', id='the OpenAPI description, HEAD'),
    pytest.param('GET', '/favicon.ico', 'image/*', id='the favicon'),
])
def test_each_document_has_the_security_headers(server, method, path, accept):
    status, headers, _ = send(server.port, method, path, headers={'Accept': accept})
    assert status in (200, 204)
    assert "frame-ancestors 'none'" in headers['content-security-policy']
    if accept != 'text/html':
        assert headers['content-security-policy'] == "default-src 'none'; frame-ancestors 'none'"
    assert headers['x-content-type-options'] == 'nosniff'
    assert headers['referrer-policy'] == 'no-referrer'
