"""The journal: each request as the client sent it, in order, kept within its bounds in every
field, its body whole or a slice of it."""

from __future__ import annotations

import http.client
import json
import signal
import time
import tracemalloc
import urllib.parse
from pathlib import Path

import pytest
import webtest

import petstore_stub as stub
from conftest import (
    AUTH,
    DOCUMENTED,
    JSON_HEADERS,
    StubProcess,
    call,
    call_once,
    connect,
    make_client,
    port_of,
    raw_post,
    rss_mb,
    send,
    wait_until,
)
from test_server import exchange

REX = {'name': 'Rex', 'categoryId': 1, 'status': 'available'}


def test_the_journal_records_each_request_in_order():
    with stub.serve() as server:
        connection = connect(server.url)
        before = time.time()
        call(connection, 'POST', '/v1/pets', REX)
        connection.request('POST', '/v1/pets', 'not json', {**AUTH, 'Content-Type': 'text/plain'})
        connection.getresponse().read()
        call(connection, 'GET', '/v1/pets?limit=5&status=sold')
        connection.close()
        first, second, third = server.requests
    assert first['method'] == 'POST' and first['path'] == '/v1/pets'
    assert first['operation'] == 'createPet'
    assert first['body'] == REX
    assert first['status'] == 201
    assert first['headers']['Authorization'] == 'Bearer petstore-demo-key'
    assert first['headers']['Content-Type'] == 'application/json'
    assert before <= first['time'] <= second['time'] <= third['time'] <= time.time()
    assert (second['body'], second['status']) == ('not json', 415)
    assert (third['query'], third['body'], third['status']) == ('limit=5&status=sold', None, 200)


def test_the_journal_records_refused_requests_too():
    with stub.serve() as server:
        connection = connect(server.url)
        connection.request('GET', '/v1/pets')
        connection.getresponse().read()
        connection.request('GET', '/v1/nowhere', headers=AUTH)
        connection.getresponse().read()
        connection.close()
        assert [(r['path'], r['operation'], r['status']) for r in server.requests] == [
            ('/v1/pets', None, 401), ('/v1/nowhere', None, 404)]


def test_a_utf8_header_value_is_journalled_as_sent():
    with stub.serve() as server:
        connection = connect(server.url)
        connection.request('GET', '/v1/pets', headers={**AUTH, 'X-Who': 'José'.encode()})
        connection.getresponse().read()
        connection.close()
        assert server.requests[0]['headers']['X-Who'] == 'José'
        server.assert_called('listPets', headers={'X-Who': 'José'})


@pytest.mark.parametrize('path, headers', [
    pytest.param('/v1/pets/999', AUTH, id='no such pet'),
    pytest.param('/v1/pets?limit=0', AUTH, id='a bad limit'),
    pytest.param('/v1/nowhere', AUTH, id='no such path'),
    pytest.param('/v1/pets', {}, id='no key'),
])
def test_a_head_error_is_journalled_with_its_code_and_message_as_a_get_is(path, headers):
    client = webtest.TestApp(stub.create_stub())
    for method in ('GET', 'HEAD'):
        client.request(path, method=method, headers=headers, status='*')
    got, head = client.app.requests
    assert head['error'] == got['error'] is not None


def test_the_journal_keeps_the_last_1000_requests():
    client = make_client(stub.create_stub())
    for number in range(1005):
        client.get(f'/v1/pets?limit={number % 100 + 1}')
    entries = client.app.requests
    assert len(entries) == 1000
    assert entries[0]['query'] == 'limit=6'
    assert entries[-1]['query'] == 'limit=5'


@pytest.mark.slow  # a load of 100 bodies under tracemalloc
def test_a_full_journal_of_bodies_of_many_small_values_stays_within_its_bound():
    client = make_client(stub.create_stub(journal_size=100))
    many_objects = b'[' + b','.join([b'{}'] * 1365) + b']'  # 4 KiB
    client.post('/v1/pets', many_objects, headers={'Content-Type': 'application/json'},
                status=400)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100):
            client.post('/v1/pets', many_objects, headers={'Content-Type': 'application/json'},
                        status=400)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 100 * 12_000  # about 10 KB an entry, as the README says
    assert client.app.requests[-1]['body'] == [{}] * 1365  # read as JSON all the same


def test_the_journal_size_can_be_set():
    with stub.serve(journal_size=2) as server:
        for limit in (1, 2, 3):
            call_once(server.url, 'GET', f'/v1/pets?limit={limit}')
        assert [r['query'] for r in server.requests] == ['limit=2', 'limit=3']


def test_a_journal_of_size_0_keeps_nothing():
    with stub.serve(journal_size=0) as server:
        assert call_once(server.url, 'GET', '/v1/pets')[0] == 200
        assert server.requests == []


@pytest.mark.parametrize('body', [
    pytest.param(b'"\\ud800"', id='lone surrogate'),
    pytest.param(b'{"name": "Rex", "categoryId": 1e400}', id='number past a float'),
    pytest.param(b'{"s": ' + b'[' * 972 + b']' * 972 + b'}', id='nested just within the parser'),
])
def test_a_body_that_cannot_go_out_again_as_json_is_journalled_as_text(body):
    with stub.serve() as server:  # on a real server, whose stack is deeper than WebTest's
        connection = connect(server.url)
        try:
            connection.request('POST', '/v1/pets', body, JSON_HEADERS)
            refused = connection.getresponse()
            assert (refused.status, json.loads(refused.read())['code']) == (400, 'invalid_body')
            connection.request('GET', '/__admin/requests', headers=AUTH)
            response = connection.getresponse()
            assert response.status == 200
            journal = stub.loads_strict(response.read().decode('utf-8'))  # no Infinity, surrogate
        finally:
            connection.close()
    assert [entry['body'] for entry in journal] == [body.decode('utf-8')]


def test_a_journal_entry_is_bounded_in_every_field():
    app = stub.create_stub()
    import webtest
    client = webtest.TestApp(app)
    headers = {f'X-H{n}': 'v' * 1000 for n in range(20)}
    client.post(f'/v1/{"p" * 5000}?{"q" * 5000}', b'x' * 100_000, headers=headers, status=401)
    (entry,) = app.requests
    assert entry['truncated'] is True
    assert len(entry['path']) == len(entry['query']) == stub.JOURNAL_TEXT_CHARS
    assert len(entry['body']) == stub.JOURNAL_BODY_BYTES
    assert sum(len(name) + len(value) for name, value in entry['headers'].items()) \
        <= stub.JOURNAL_HEADER_CHARS
    assert len(json.dumps(entry)) < 12_000


def test_a_small_body_is_kept_whole_and_not_marked_truncated():
    import webtest
    app = stub.create_stub()
    webtest.TestApp(app).post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1}, headers=AUTH)
    (entry,) = app.requests
    assert (entry['body'], entry['truncated']) == ({'name': 'Rex', 'categoryId': 1}, False)


@pytest.mark.slow
@pytest.mark.skipif(not Path('/proc/self/status').exists(), reason='reads RSS from /proc')
def test_the_journal_keeps_a_slice_of_each_body_whatever_its_size():
    server = StubProcess('--db', ':memory:', '--quiet', '--admin')
    port = port_of(server.url)
    mebibyte = b'x' * (1 << 20)
    assert {raw_post(port, mebibyte, key=False) for _ in range(20)} == {401}
    warmed = rss_mb(server.process.pid)
    assert {raw_post(port, mebibyte, key=False) for _ in range(200)} == {401}
    grown = rss_mb(server.process.pid) - warmed
    connection = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    connection.request('GET', '/__admin/requests', headers=AUTH)
    journal = json.loads(connection.getresponse().read())
    connection.close()
    server.stop(signal.SIGTERM)
    # Before, 120 such requests took RSS from 27 to 543 MB.
    assert grown < 20, f'RSS grew {grown:.1f} MB over 200 bodies of 1 MiB'
    assert len(journal) == 220
    assert all(entry['truncated'] for entry in journal)
    assert {len(entry['body']) for entry in journal} == {stub.JOURNAL_BODY_BYTES}


# -- credentials --------------------------------------------------------------------

SECRETS = {'Authorization': 'Bearer wrong-secret-xyz', 'Proxy-Authorization': 'Basic dXNlcjpwdw==',
           'Cookie': 'session=topsecret; theme=dark', 'Set-Cookie': 'id=a3fWa',
           'X-Api-Key': 'sk-live-123'}
MASKED = {'Authorization': 'Bearer <redacted: 16 characters>',
          'Proxy-Authorization': 'Basic <redacted: 12 characters>',
          'Cookie': '<redacted: 29 characters>', 'Set-Cookie': '<redacted: 8 characters>',
          'X-Api-Key': '<redacted: 11 characters>'}


@pytest.fixture
def secrets_sent():
    """An app with the admin endpoints that has had one request with credentials not its own."""
    app = stub.create_stub(admin=True)
    webtest.TestApp(app).get('/v1/pets', headers=SECRETS, status=401)
    return app, make_client(app)


def test_credentials_that_are_not_the_stubs_keys_are_journalled_masked_keeping_scheme_and_length(
        secrets_sent):
    app, client = secrets_sent
    (entry,) = app.requests
    assert {name: entry['headers'][name] for name in SECRETS} == MASKED
    served = client.get('/__admin/requests').text
    assert [name for name in SECRETS if SECRETS[name] in served] == []
    assert 'topsecret' not in served and 'wrong-secret-xyz' not in json.dumps(app.requests)


def test_the_stubs_own_key_is_journalled_as_sent():
    app = stub.create_stub(api_keys=['mine', 'other'])
    webtest.TestApp(app).get('/v1/pets', headers={'Authorization': 'bearer  other'})
    assert app.requests[0]['headers']['Authorization'] == 'bearer  other'


def test_an_expected_credential_matches_as_sent_and_a_difference_shows_it_masked(secrets_sent):
    app, client = secrets_sent
    app.assert_called('GET /pets', headers=SECRETS)
    with pytest.raises(AssertionError) as failure:
        app.assert_called('GET /pets', headers={'Authorization': 'Bearer right'})
    assert "expected 'Bearer right', sent 'Bearer <redacted: 16 characters>'" in str(failure.value)
    assert 'wrong-secret' not in str(failure.value)
    count = client.post_json('/__admin/requests/count',
                             {'method': 'GET', 'path': '/pets', 'headers': SECRETS})
    assert count.json == {'count': 1}


@pytest.mark.parametrize('raw', [
    pytest.param(b'Authorization: Bearer SECRET\nX: y\r\n', id='a bare LF in Authorization'),
    pytest.param(b'Cookie: s=SECRET\r\r\n', id='a bare CR in Cookie'),
    pytest.param(b' Authorization: Bearer SECRET\r\n', id='Authorization folded into Host'),
    pytest.param(b'Authorization: Bearer\r\n SECRET\rx\r\n', id='a folded line with a bare CR'),
    pytest.param(b'X-Token\x7f: SECRET\r\n', id='a DEL in a credential header name'),
])
def test_a_credential_in_a_header_line_the_server_refuses_is_not_journalled(raw):
    with stub.serve() as server:
        status, headers, body = exchange(server.port, b'GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1'
                                         b'\r\n' + raw + b'Connection: close\r\n\r\n')
        (entry,) = server.requests
    assert status == 400 and b'SECRET' not in body and 'SECRET' not in str(headers)
    assert entry['status'] == 400 and 'SECRET' not in json.dumps(server.requests)


@pytest.mark.parametrize('line', [
    pytest.param(b'GET\t/v1/pets?access_token=SECRET HTTP/1.1', id='a tab in the request line'),
    pytest.param(b'GET http://u:SECRET@127.0.0.1/v1/pets HTTP/1.1', id='a password in the URL'),
    pytest.param(b'GET /v1/pets?limit=1;access_token=SECRET HTTP/1.1', id='a ; separator'),
    pytest.param(b'GET /v1/pets?api+key=SECRET HTTP/1.1', id='a + in the name'),
    pytest.param(b'GET /v1/pets?token;x=SECRET HTTP/1.1', id='a ; in a name'),
    pytest.param(b'GET http://u:pa@SECRET@127.0.0.1/v1/pets HTTP/1.1', id='an @ in a password'),
])
def test_a_credential_in_the_request_line_is_neither_journalled_nor_logged(line):
    lines = []
    app = stub.create_stub(admin=True, access_log=lines.append)
    with stub.StubServer(app) as server:
        exchange(server.port, line + b'\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
        wait_until(lambda: lines)
        assert len(server.requests) == 1
    assert 'SECRET' not in json.dumps(server.requests) and 'SECRET' not in lines[0]


# -- coverage: what the calls met of the API's description ---------------------------------

def test_coverage_counts_each_documented_response_met_the_faults_and_the_deprecated_calls():
    app = stub.create_stub()
    client = make_client(app)
    client.get('/v1/pets')
    client.get('/v1/pets?limit=0', status=400)
    client.post_json('/v1/pets', REX, status=201)
    client.get('/v1/pets/1')
    client.get('/v1/pets/2', status=404)
    webtest.TestApp(app).get('/v1/pets', status=401)
    client.get('/v1/openapi.json')  # a document: not counted
    client.get('/v1/nowhere', status=404)  # no operation: not counted
    app.fail_next(503, route='listPets')
    client.get('/v1/pets', status=503)  # a status listPets does not describe: its default
    app.reset()  # the coverage spans a session: a reset keeps it
    coverage = app.coverage()
    assert coverage['responses']['listPets'] == {'200': 1, '400': 1, '401': 1, '500': 0}
    assert coverage['responses']['getPet'] == {'200': 1, '400': 0, '401': 0, '404': 1, '500': 0}
    assert coverage['responses']['createPet']['201'] == 1
    assert (coverage['met'], coverage['documented']) == (6, sum(map(len, DOCUMENTED.values())))
    assert coverage['faults'] == {'503': 1}
    assert coverage['deprecated'] == {'getPet': {
        'calls': 2, 'hint': 'Removed on Thu, 05 Dec 2030 00:00:00 GMT; use GET /pets with the '
                            'status filter instead.'}}
    assert stub.coverage_line(coverage).startswith(
        f'coverage: 6 of {coverage["documented"]} documented responses met; never: listPets 500, '
        'createPet 400, ')
    app.clear_coverage()
    assert app.coverage()['met'] == 0 and app.coverage()['deprecated'] == {}


def test_the_admin_api_gives_the_coverage_and_clears_it():
    client = make_client(stub.create_stub(admin=True))
    client.get('/v1/pets/1', status=404)
    covered = client.get('/__admin/coverage').json
    assert covered['responses']['getPet']['404'] == 1 and covered['deprecated']['getPet']['calls']
    client.delete('/__admin/coverage', status=204)
    assert client.get('/__admin/coverage').json['met'] == 0


@pytest.mark.parametrize('name, value, shown', [
    pytest.param('X-Api-Key', 'SECRETscheme05 x', '<redacted: 16 characters>',
                 id='X-Api-Key keeps no first word'),
    pytest.param('Cookie', 'SECRETcookie06 sess=1', '<redacted: 21 characters>',
                 id='Cookie keeps no first word'),
    pytest.param('Authorization', 'SECRETnoscheme25 Bearer', '<redacted: 23 characters>',
                 id='Authorization keeps no unregistered scheme'),
    pytest.param('Authorization', 'Digest SECRET', 'Digest <redacted: 6 characters>',
                 id='Authorization keeps a registered scheme'),
    pytest.param('Proxy-Authorization', 'negotiate SECRET', 'negotiate <redacted: 6 characters>',
                 id='Proxy-Authorization keeps a registered scheme in any case'),
    pytest.param('Authentication', 'Bearer SECRET', '<redacted: 13 characters>',
                 id='Authentication keeps no scheme'),
    *(pytest.param(name, 'SECRET-value', '<redacted: 12 characters>', id=name) for name in (
        'X-Auth-Token', 'Api-Key', 'X-Access-Token', 'Private-Token', 'X-Amz-Security-Token',
        'X-Goog-Api-Key', 'X-Csrf-Token', 'X-Session-Id', 'X-Client-Secret', 'X-Signature',
        'X-Password', 'Apikey', 'X-Secret-Key', 'X-Credential', 'X-Api.Key')),
    pytest.param('Idempotency-Key', 'order-17', 'order-17', id='Idempotency-Key is no credential'),
    pytest.param('X-Request-Id', 'r-1', 'r-1', id='X-Request-Id is no credential'),
])
def test_a_header_named_as_a_credential_is_journalled_masked_whole_but_a_registered_scheme(
        name, value, shown):
    app = stub.create_stub(admin=True)
    client = make_client(app)
    client.get('/v1/pets', headers={name: value}, status='*')
    (entry,) = app.requests
    assert entry['headers'][name] == shown
    app.assert_called('GET /pets', headers={name: value})  # a test still matches it as sent
    if shown != value:
        assert 'SECRET' not in client.get('/__admin/requests').text


@pytest.mark.parametrize('query', ['api_key=SECRET1&limit=5', 'limit=5&access_token=SECRET1',
                                   'limit=5&Client%5FSecret=SECRET1'])
def test_a_query_parameter_named_as_a_credential_is_shown_masked_wherever_a_request_is(query):
    lines = []
    app = stub.create_stub(admin=True, access_log=lines.append)
    client = make_client(app)
    client.get(f'/v1/pets?{query}', status=400)  # listPets takes no such parameter
    (entry,) = app.requests
    assert 'SECRET1' not in json.dumps(app.requests) and 'SECRET1' not in lines[0]
    assert '<redacted: 7 characters>' in entry['query'] and 'limit=5' in entry['query']
    assert 'SECRET1' not in client.get('/__admin/requests').text
    name = query.replace('limit=5', '').strip('&').partition('=')[0]
    app.assert_called('listPets', query={urllib.parse.unquote(name): 'SECRET1', 'limit': 5})
    with pytest.raises(AssertionError) as failure:
        app.assert_called('listPets', query={'limit': 6})
    assert 'SECRET1' not in str(failure.value)
    failed = client.post_json('/__admin/requests/assert',
                              {'operation': 'listPets', 'query': {'limit': 6}}, status=409)
    assert 'SECRET1' not in failed.text


def test_the_stub_has_no_way_to_journal_or_log_credentials_unmasked(capsys):
    with pytest.raises(TypeError, match='show_credentials'):
        stub.create_stub(show_credentials=True)  # removed in 4.0.0
    with pytest.raises(SystemExit):
        stub.main(['--show-credentials'])
    assert 'unrecognized arguments: --show-credentials' in capsys.readouterr().err


@pytest.mark.parametrize('password', ['SECRET', 'SECRET' * 400], ids=['short', 'past-the-cut'])
def test_a_password_in_a_path_that_begins_with_two_slashes_is_not_journalled_nor_echoed(password):
    lines = []
    app = stub.create_stub(admin=True, access_log=lines.append)
    with stub.StubServer(app) as server:
        status, _, answer = send(server.port, 'GET', f'//user:{password}@host/v1/pets')
        (entry,) = server.requests
    assert (status, json.loads(answer)['message']) == (
        404, 'nothing is at //<redacted>@host/v1/pets; the API is under /v1')
    assert entry['path'] == '//<redacted>@host/v1/pets' and 'SECRET' not in json.dumps(entry)
    assert 'GET //<redacted>@host/v1/pets 404' in lines[0]
    failed = make_client(app).post_json('/__admin/requests/assert',
                                        {'operation': 'listPets'}, status=409)
    assert 'SECRET' not in failed.text


def test_a_target_that_urllib_cannot_split_is_a_400_with_the_error_body():
    with stub.serve() as server:
        status, headers, answer = exchange(server.port, b'GET http://user:x@[x/v1/pets HTTP/1.1'
                                           b'\r\nHost: localhost\r\n\r\n')
        (entry,) = server.requests
    assert (status, json.loads(answer)['code'], headers['Connection']) == (
        400, 'bad_request', 'close')
    assert json.loads(answer)['message'].startswith('the request is not valid HTTP: the request '
                                                    'target is not a URL')
    assert 'x@[x' not in json.dumps(entry)


def test_a_password_in_the_host_header_is_not_journalled():
    with stub.serve() as server:
        status, _, answer = send(server.port, 'GET', '/v1/pets', host='user:SECRET@evil')
        (entry,) = server.requests
    assert status == 400 and b'SECRET' not in answer
    assert 'SECRET' not in json.dumps(server.requests) and '<redacted>@evil' in entry['error'][
        'message']


@pytest.mark.parametrize('target', ['user:hunter4@localhost/v1', 'http:/\\u:hunter4@localhost/v1/pets',
                                    'http:///u:hunter4@/nope', '/v1/pets/u:hunter4@x'])
def test_a_password_in_a_target_without_two_slashes_is_not_journalled_nor_logged(target) -> None:
    lines: list[str] = []
    app = stub.create_stub(admin=True, access_log=lines.append)
    with stub.StubServer(app) as server:
        status, _, answer = send(server.port, 'GET', target)
        (entry,) = server.requests
    assert status in (400, 404)
    assert '<redacted>@' in entry['path'] + lines[0]
    assert 'hunter4' not in json.dumps([answer.decode('latin-1'), entry, lines])


def test_a_page_whose_origin_holds_a_password_is_named_without_it_in_the_cors_hint() -> None:
    lines: list[str] = []
    client = make_client(stub.create_stub(access_log=lines.append))
    client.options('/v1/pets', headers={'Origin': 'http://u:hunter3@evil.example',
                                        'Access-Control-Request-Method': 'GET'}, status=403)
    hint = next(line for line in lines if line.startswith('petstore-stub: a page on'))
    assert 'hunter3' not in hint and 'http://<redacted>@evil.example' in hint


@pytest.mark.parametrize('target, shown', [
    ('/v1/u:hunter2%C3%A9@x', '/v1/<redacted>@x'),  # escaped after it is masked
    ('/v1/u:hunter2;x@y', '/v1/<redacted>@y'),  # ; , = & may be in a userinfo
    ('/v1/u:hunter2,x=y&z@y', '/v1/<redacted>@y'),
    ("/v1/u:hunter2'x@y", '/v1/<redacted>@y'),  # a quote, which a message puts around a value
    ('/v1/u:hunter2%20x@y', '/v1/<redacted>@y'),  # a space, once decoded
])
def test_a_password_with_characters_a_userinfo_may_hold_is_masked_whole(target, shown) -> None:
    lines: list[str] = []
    app = stub.create_stub(admin=True, access_log=lines.append)
    with stub.StubServer(app) as server:
        status, _, answer = send(server.port, 'GET', target)
        (entry,) = server.requests
    assert (status, json.loads(answer)['message']) == (404, f'nothing is at {shown}')
    assert 'hunter2' not in json.dumps([answer.decode('latin-1'), entry, lines])


def test_an_assertion_shows_a_query_value_as_the_journal_masks_it() -> None:
    app = stub.create_stub(admin=True)
    client = make_client(app)
    client.get('/v1/pets?next=http://u:hunter2@evil&x=token=hunter2', status=400)
    with pytest.raises(AssertionError) as failure:
        app.assert_called('GET /v1/pets', query={'next': 'n', 'x': 'y'})
    refused = client.post_json('/__admin/requests/assert', {
        'method': 'GET', 'path': '/v1/pets', 'query': {'next': 'n', 'x': 'y'}}, status=409)
    assert "sent 'http://<redacted>@evil'" in str(failure.value)
    assert 'hunter2' not in str(failure.value) + refused.text


def test_a_userinfo_in_a_query_value_is_masked_and_the_other_pairs_are_kept() -> None:
    app = stub.create_stub(admin=True)
    make_client(app).get('/v1/pets?limit=5&next=http://u:hunter2@evil&x=1', status=400)
    assert app.requests[0]['query'] == 'limit=5&next=http://<redacted>@evil&x=1'


@pytest.mark.parametrize('where', ['path', 'header'])
def test_a_long_part_with_no_at_sign_is_masked_in_one_pass(where) -> None:
    """The userinfo mask tries each part of a URL from its start alone: a 250 KB part without an
    @ costs one pass, where trying it from each character took minutes."""
    part = 'a' * 250_000
    app = stub.create_stub(admin=True)
    with stub.StubServer(app) as server:
        if where == 'path':
            status = send(server.port, 'GET', '/v1/' + part)[0]
        else:
            status = send(server.port, 'GET', '/v1/pets', headers={'Referer': part})[0]
        (entry,) = server.requests
    assert status == (404 if where == 'path' else 200) and entry['truncated']


@pytest.mark.parametrize('target', [
    '/nope?user:hunter5@h=1', '/v1/pets?user:hunter5@h=1',  # in a query parameter's name
    '/v1/pets?status=user%3Ahunter5%40host', '/v1/pets?next=http%3A%2F%2Fuser%3Ahunter5%40host',
    '/v1/pets/http%3A%2F%2Fuser%3Ahunter5%40host', '/v1/pets/user%3Ahunter5%40x',  # %40 is @
])
def test_a_password_in_a_query_name_or_before_a_percent_encoded_at_is_masked_everywhere(
        target) -> None:
    lines: list[str] = []
    app = stub.create_stub(admin=True, access_log=lines.append)
    with stub.StubServer(app) as server:
        status, _, answer = send(server.port, 'GET', target)
        (entry,) = server.requests
        shown = [answer.decode('latin-1'), entry, lines, server.coverage()['unmatched']]
    assert status in (400, 404)
    assert '<redacted>' in entry['path'] + entry['query'] and 'hunter5' not in json.dumps(shown)


def test_a_masked_query_value_keeps_its_name_in_an_assertion_s_message() -> None:
    app = stub.create_stub(admin=True)
    client = make_client(app)
    client.get('/v1/pets?limit=u:hunter6@host', status=400)
    refused = client.post_json('/__admin/requests/assert', {'operation': 'createPet'}, status=409)
    assert 'GET /v1/pets?limit=<redacted>@host -> 400' in refused.json['message']
    assert 'hunter6' not in refused.text


def test_a_body_with_a_key_given_twice_is_journalled_as_text_and_matches_no_json() -> None:
    app = stub.create_stub(admin=True)
    client = make_client(app)
    sent = '{"name": "Evil", "categoryId": 1, "name": "Kiwi"}'
    client.post('/v1/pets', sent, content_type='application/json', status=400)
    assert app.requests[0]['body'] == sent  # not the object a lax parser would make of it
    assert app.find_requests('createPet', json={'name': 'Kiwi', 'categoryId': 1}) == []
