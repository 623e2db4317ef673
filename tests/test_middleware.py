"""The middleware around the app: the Host check against DNS rebinding (and the hosts allowed),
CORS (none on the admin endpoints), and the access log's lines."""

from __future__ import annotations

import http.client
import json
import re

import pytest
import webtest

import petstore_stub as stub
from conftest import AUTH, JSON, KEY, PREFLIGHT, call_once, make_client, send

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
    pytest.param('GET', '/', None, {'Accept': 'text/html'}, id='the page'),
    pytest.param('GET', '/', None, {}, id='the JSON index'),
    pytest.param('GET', '/v1/openapi.json', None, {}, id='the OpenAPI description'),
    pytest.param('GET', '/favicon.ico', None, {}, id='the favicon'),
    pytest.param('OPTIONS', '/v1/pets', None, {'Access-Control-Request-Method': 'POST'},
                 id='a preflight to the API'),
    pytest.param('OPTIONS', '/__admin/reset', None, {'Access-Control-Request-Method': 'POST'},
                 id='a preflight to the admin endpoints'),
]


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
    assert server.app.faults.listed() == {'faults': []}
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


def test_a_host_the_server_cannot_read_is_journalled_as_its_400():
    app = stub.create_stub()
    with stub.StubServer(app) as server:
        send(server.port, 'GET', '/v1/pets', host='nowhere/at/all')
    (entry,) = app.requests
    assert (entry['path'], entry['status'], entry['error']['code']) == (
        '/v1/pets', 400, 'bad_request')


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
    with pytest.raises(TypeError, match='give a list of host names'):
        stub.create_stub(allowed_hosts='pets.local')


# -- CORS ------------------------------------------------------------------------

def request(server: stub.StubServer, method: str, path: str, headers: dict, body=None):
    connection = http.client.HTTPConnection('127.0.0.1', server.port, timeout=10)
    try:
        connection.request(method, path, body, headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_a_preflight_needs_no_key_and_allows_authorization():
    with stub.serve(cors=True) as server:
        status, headers, body = request(server, 'OPTIONS', '/v1/pets', PREFLIGHT)
    assert (status, body) == (204, b'')
    assert headers['Access-Control-Allow-Origin'] == '*'
    assert {'GET', 'POST'} <= set(headers['Access-Control-Allow-Methods'].replace(' ', '').split(','))
    assert 'authorization' in headers['Access-Control-Allow-Headers'].lower()
    assert 'content-type' in headers['Access-Control-Allow-Headers'].lower()


def test_a_cross_origin_create_can_read_its_location():
    with stub.serve(cors=True) as server:
        status, headers, _ = request(
            server, 'POST', '/v1/pets', {**AUTH, 'Origin': 'https://demo.example',
                                         'Content-Type': 'application/json'},
            json.dumps({'name': 'Rex', 'categoryId': 1}))
    assert status == 201
    assert headers['Access-Control-Allow-Origin'] == '*'
    assert 'Location' in headers['Access-Control-Expose-Headers']


@pytest.mark.parametrize('headers, status', [
    pytest.param({}, 401, id='no key'),
    pytest.param(AUTH, 404, id='no such path'),
])
def test_errors_carry_cors_headers_so_a_browser_can_read_them(headers, status):
    with stub.serve(cors=True) as server:
        got, response_headers, body = request(server, 'GET', '/v1/nothing' if headers else '/v1/pets',
                                               {**headers, 'Origin': 'https://demo.example'})
    assert got == status
    assert response_headers['Access-Control-Allow-Origin'] == '*'
    assert json.loads(body)['status'] == status


def test_cors_is_off_by_default():
    with stub.serve() as server:
        _, headers, _ = request(server, 'GET', '/v1/pets', {**AUTH, 'Origin': 'https://x.example'})
    assert 'Access-Control-Allow-Origin' not in headers


@pytest.mark.parametrize('path, status, code', [
    pytest.param('/v1/pets', 403, 'cors_not_enabled', id='the API'),
    pytest.param('/v1/nothing', 403, 'cors_not_enabled', id='no such path'),
    pytest.param('/__admin/reset', 401, 'unauthorized', id='an admin endpoint'),
])
def test_without_cors_a_preflight_is_told_of_the_flag_but_not_on_admin_paths(path, status, code):
    with stub.serve() as server:
        got, headers, body = request(server, 'OPTIONS', path, PREFLIGHT)
    error = json.loads(body)
    assert (got, error['code']) == (status, code)
    assert ('--cors' in error['message']) == (status == 403)
    assert 'Access-Control-Allow-Origin' not in headers


def test_the_access_log_hints_at_cors_the_first_time_only():
    lines = []
    client = webtest.TestApp(stub.create_stub(access_log=lines.append))
    for _ in range(2):
        client.options('/v1/pets', headers=PREFLIGHT, status=403)
    hints = [line for line in lines if 'OPTIONS' not in line]
    assert hints == ['petstore-stub: a page on https://demo.example asked to call the API; '
                     'restart the stub with --cors to let it']


# -- no CORS on the admin endpoints -----------------------------------------------------

@pytest.mark.parametrize('path', ['/__admin/reset', '/__admin/requests', '/__admin/fixtures',
                                  '/__admin/faults'])
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


# -- behind a proxy ----------------------------------------------------------------

def test_location_is_a_path_so_it_stays_right_behind_any_proxy():
    with stub.serve() as server:
        status, headers, _ = request(server, 'POST', '/v1/pets',
                                     {**AUTH, 'Content-Type': 'application/json'},
                                     json.dumps({'name': 'Rex', 'categoryId': 1}))
    assert (status, headers['Location']) == (201, '/v1/pets/1')


# -- the access log ------------------------------------------------------------------

def test_the_access_log_prints_a_line_per_request():
    # The command line sends these lines to stdout (test_cli); here, one from a real socket.
    lines = []
    with stub.StubServer(stub.create_stub(access_log=lines.append)) as server:
        call_once(server.url, 'GET', '/v1/pets?limit=3')
    (line,) = lines
    assert re.fullmatch(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d 127\.0\.0\.1 GET /v1/pets\?limit=3 200 \d+\.\dms',
                        line)


def test_control_characters_in_the_path_are_escaped_in_the_access_log():
    import webtest
    lines = []
    webtest.TestApp(stub.create_stub(access_log=lines.append)).get('/v1/pets%0Aforged%1B[31m',
                                                                   status=401)
    (line,) = lines
    assert ' GET /v1/pets\\x0aforged\\x1b[31m 401 ' in line
    assert line.isprintable()


@pytest.mark.parametrize('name, value, status', [
    pytest.param('Host', 'user:hunter2@evil.com', 421, id="a Host, which the Host check quotes"),
    pytest.param('Referer', 'http://user:hunter2@evil.com/', 200, id='a Referer'),
    pytest.param('X-Forwarded-Host', 'user:hunter2@evil.com', 200, id='an X-Forwarded-Host'),
])
def test_a_password_in_a_header_is_masked_in_the_answer_the_journal_and_the_log(
        name, value, status) -> None:
    lines: list[str] = []
    app = stub.create_stub(admin=True, access_log=lines.append, allowed_hosts=())
    key = 'HTTP_' + name.upper().replace('-', '_')
    answer = make_client(app).get('/v1/pets', extra_environ={key: value}, status='*')
    (entry,) = app.requests
    assert answer.status_int == status
    if status == 421:  # on a socket the server refuses such a Host first, and journals no header
        assert "names '<redacted>@evil.com'" in answer.json['message']
    assert '<redacted>@evil.com' in entry['headers'][name]
    assert 'hunter2' not in json.dumps([answer.text, entry, lines])
    app.assert_called('GET /v1/pets', headers={name: value})  # as sent, for a test to match


def test_a_host_with_a_long_password_is_masked_before_the_refusal_quotes_it(server) -> None:
    host = 'u:hunter2' + 'x' * 80 + '@evil.example'  # its @ past the 60 characters quoted
    status, _, answer = send(server.port, 'GET', '/v1/pets', host=host)
    assert status == 400 and "got '<redacted>@evil.example'" in json.loads(answer)['message']
    assert 'hunter2' not in answer.decode('latin-1')
    assert 'hunter2' not in json.dumps(server.requests[-1])
