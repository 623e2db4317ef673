"""The answers the pages of docs/ quote, in their fences and their tables, are the stub's: each
test reads the page and asks the stub, so that neither can change without the other."""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tinydb
import webtest

import petstore_stub as stub
from conftest import PREFLIGHT, SERVED, gone_pid, make_client, recording
from test_readme import PAGES, ROOT, page_fences, table_rows

#: What a trigger gives: the status and the JSON body (None when there is none).
Answer = tuple[int, Any]


@pytest.fixture(scope='module')
def server() -> Iterator[stub.StubServer]:
    """One stub on a loopback socket, for what only the wire shows: the HTTP server's refusals
    and the Host check."""
    with stub.serve() as running:
        yield running


def raw(server: stub.StubServer, request: bytes) -> Answer:
    """``request`` sent as bytes to ``server`` over a new connection; what came back."""
    with socket.create_connection(('127.0.0.1', server.port), timeout=10) as connection:
        connection.sendall(request)
        data = b''
        while chunk := connection.recv(65536):
            data += chunk
    head, _, body = data.partition(b'\r\n\r\n')
    return int(head.split(b' ', 2)[1]), json.loads(body) if body else None


def answer(response: webtest.TestResponse) -> Answer:
    return response.status_int, response.json if response.body else None


def in_process(**options: Any) -> webtest.TestApp:
    return make_client(stub.create_stub(admin=True, **options))


# -- docs/promises.md: the table of errors ---------------------------------------------

def error_pairs() -> list[tuple[str, str, str]]:
    """Each (status, code) the table of errors gives, with the row's "when"."""
    pairs = []
    for status_cell, code_cell, when in table_rows('promises.md', 'status'):
        statuses = status_cell.split(' / ')
        codes = re.findall(r'`([a-z0-9_]+)`', code_cell)
        assert len(statuses) in (1, len(codes)), status_cell
        pairs += [(statuses[0] if len(statuses) == 1 else statuses[index], code, when)
                  for index, code in enumerate(codes)]
    return pairs


def full_disk(descriptor: int, data: bytes) -> None:
    raise OSError(28, 'No space left on device')


def broken(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError('a bug')


Trigger = Callable[[stub.StubServer, pytest.MonkeyPatch, Path], Answer]

#: For each code: what of the row's "when" it acts out, and a request that meets it.
ERROR_TRIGGERS: dict[str, tuple[str, Trigger]] = {
    'invalid_parameter': ('`limit` not 1..100', lambda server, patch, tmp: answer(
        in_process().get('/v1/pets?limit=101', status='*'))),
    'invalid_body': ('`1e999`', lambda server, patch, tmp: answer(in_process().post(
        '/v1/pets', b'{"name": "Rex", "categoryId": 1e999}', content_type='application/json',
        status='*'))),
    'bad_request': ('`Transfer-Encoding` with `Content-Length`', lambda server, patch, tmp: raw(
        server, b'POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n'
                b'Content-Length: 5\r\n\r\n0\r\n\r\n')),
    'unauthorized': ('no `Authorization: Bearer <key>` header', lambda server, patch, tmp: answer(
        webtest.TestApp(stub.create_stub()).get('/v1/pets', status='*'))),
    'invalid_token': ('a key the stub does not accept', lambda server, patch, tmp: answer(
        webtest.TestApp(stub.create_stub()).get(
            '/v1/pets', headers={'Authorization': 'Bearer not-a-key'}, status='*'))),
    'cors_not_enabled': ("a browser's preflight", lambda server, patch, tmp: answer(
        in_process().options('/v1/pets', headers=PREFLIGHT, status='*'))),
    'misdirected_request': ('a `Host` that is not a loopback name', lambda server, patch, tmp: raw(
        server, b'GET /v1/pets HTTP/1.1\r\nHost: evil.example\r\n'
                b'Authorization: Bearer petstore-demo-key\r\nConnection: close\r\n\r\n')),
    'not_found': ('zero and negative ids too', lambda server, patch, tmp: answer(
        in_process().get('/v1/pets/0', status='*'))),
    'method_not_allowed': ('a method the path does not serve', lambda server, patch, tmp: answer(
        in_process().delete('/v1/pets', status='*'))),  # a method no exercise adds there
    'store_not_empty': ('fixtures loaded into a store that holds pets', lambda server, patch, tmp:
                        answer(loaded_twice())),
    'assertion_failed': ('`POST /__admin/requests/assert` does not hold',
                         lambda server, patch, tmp: answer(in_process().post_json(
                             '/__admin/requests/assert', {'operation': 'createPet'},
                             status='*'))),
    'too_many_faults': ('a 101st fault queued', lambda server, patch, tmp: answer(
        with_faults_queued(100).post_json('/__admin/faults', {'fault': 503}, status='*'))),
    'payload_too_large': ('a body over 1 MiB', lambda server, patch, tmp: answer(
        in_process().post('/v1/pets', b' ' * (2**20 + 1), content_type='application/json',
                          status='*'))),
    'header_too_large': ('request headers over 256 KiB', lambda server, patch, tmp: raw(
        server, b'GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: '
                + b'a' * (256 * 1024) + b'\r\n\r\n')),
    'unsupported_media_type': ('not `application/json`', lambda server, patch, tmp: answer(
        in_process().post('/v1/pets', b'{}', content_type='text/plain', status='*'))),
    'storage_error': ('the database could not be written (a full disk)', lambda server, patch,
                      tmp: answer(on_a_full_disk(patch, tmp))),
    'internal_error': ('a bug', lambda server, patch, tmp: answer(with_a_bug(patch))),
    'fault_needs_a_server': ('a `drop`, `reset` or `hang` fault on the in-process app',
                             lambda server, patch, tmp: answer(after_fault('drop'))),
    'not_implemented': ('`GET /store/orders`', lambda server, patch, tmp: answer(
        in_process().get('/v1/store/orders', status='*'))),
    'http_version_not_supported': ('`HTTP/2.0`', lambda server, patch, tmp: raw(
        server, b'GET /v1/pets HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n')),
    'ids_exhausted': ('a pet holds the largest int64 id', lambda server, patch, tmp: answer(
        past_the_last_id())),
    'service_unavailable': ('a fault queued with `fail_next`', lambda server, patch, tmp: answer(
        after_fault(503))),
}


def loaded_twice() -> webtest.TestResponse:
    client = in_process()
    client.post('/__admin/fixtures', status=201)
    return client.post('/__admin/fixtures', status='*')


def with_faults_queued(count: int) -> webtest.TestApp:
    client = in_process()
    for _ in range(count):
        client.post_json('/__admin/faults', {'fault': 503, 'route': 'getPet'}, status=201)
    return client


def on_a_full_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> webtest.TestResponse:
    client = in_process(store=stub.StubStore(tmp_path / 'pets.json'))
    monkeypatch.setattr(stub, 'append_durably', full_disk)
    try:
        return client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1}, status='*')
    finally:
        client.app.store.close()


def with_a_bug(monkeypatch: pytest.MonkeyPatch) -> webtest.TestResponse:
    monkeypatch.setattr(stub, 'parse_limit', broken)
    return in_process().get('/v1/pets', status='*', expect_errors=True)


def after_fault(fault: int | str) -> webtest.TestResponse:
    client = in_process()
    client.app.fail_next(fault)
    return client.get('/v1/pets', status='*')


def past_the_last_id() -> webtest.TestResponse:
    client = in_process(store=stub.StubStore(first_id=2**63 - 1))
    client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1}, status=201)
    return client.post_json('/v1/pets', {'name': 'Bella', 'categoryId': 1}, status='*')


@pytest.mark.parametrize('status, code, when', [
    pytest.param(*pair, id=f'{pair[0]} {pair[1]}') for pair in error_pairs()])
def test_each_error_the_promises_list_is_answered_with_its_status_and_code(
        server, monkeypatch, tmp_path, status, code, when):
    acted_out, trigger = ERROR_TRIGGERS[code]
    assert acted_out in when
    got_status, body = trigger(server, monkeypatch, tmp_path)
    assert body['code'] == code, body
    assert (str(got_status) if status != 'any' else 'any', body['status']) == (status, got_status)


def test_every_error_acted_out_is_one_the_promises_list():
    assert sorted(ERROR_TRIGGERS) == sorted(code for _, code, _ in error_pairs())


# -- docs/promises.md: the choices where the API is silent -----------------------------

REX = {'name': 'Rex', 'categoryId': 1}
GET = b'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer petstore-demo-key\r\n' \
      b'Connection: close\r\n\r\n'


def with_rex() -> webtest.TestApp:
    client = in_process()
    client.post_json('/v1/pets', REX, status=201)
    return client


def statuses(client: webtest.TestApp, *paths: str, **options: Any) -> list[int]:
    return [client.get(path, status='*', **options).status_int for path in paths]


def shown_without_status(server: stub.StubServer) -> None:
    assert with_rex().get('/v1/pets/1').json == {'id': 1, **REX}


def names_kept_byte_for_byte(server: stub.StubServer) -> None:
    name = ' Kiwi  KIWI '
    assert in_process().post_json('/v1/pets', {'name': name, 'categoryId': 1}).json['name'] == name


def no_pagination_beyond_limit(server: stub.StubServer) -> None:
    client = with_rex()
    assert statuses(client, '/v1/pets?offset=1', '/v1/pets?limit=5&limit=6',
                    '/v1/pets/1?limit=5') == [400, 400, 400]
    assert client.post_json('/v1/pets?limit=5', REX, status='*').status_int == 400


def codes_in_snake_case(server: stub.StubServer) -> None:
    assert all(re.fullmatch(r'[a-z0-9]+(_[a-z0-9]+)*', code) for _, code, _ in error_pairs())


def orders_not_implemented(server: stub.StubServer) -> None:
    assert statuses(in_process(), '/v1/store/orders') == [501]


def deprecation_from_2026(server: stub.StubServer) -> None:
    assert with_rex().get('/v1/pets/1').headers['Deprecation'] == '@1767225600'
    assert stub.DEPRECATED_SINCE == 1767225600  # 2026-01-01T00:00:00Z


def unknown_fields_and_numbers_refused(server: stub.StubServer) -> None:
    client = in_process()
    for field in ('id', 'categoryID', 'staus'):
        refused = client.post_json('/v1/pets', {**REX, field: 1}, status=400).json
        assert (refused['code'], field in refused['message']) == ('invalid_body', True), refused
    for number in ('1', 1.0, True):
        assert client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': number},
                                status='*').status_int == 400
    assert client.app.store.list_json(100, None) == '[]'


def pets_hold_four_fields(server: stub.StubServer) -> None:
    client = with_rex()
    client.post_json('/v1/pets', {**REX, 'status': 'sold'}, status=201)
    assert {field for pet in client.get('/v1/pets').json for field in pet} == {
        'id', 'name', 'categoryId', 'status'}
    pet = stub.openapi_template('openapi.json')['components']['schemas']['Pet']
    assert pet.get('additionalProperties', True) is not False


def ids_past_a_double(server: stub.StubServer) -> None:
    assert with_rex().get('/v1/pets/1').json['id'] == 1
    first = 9007199254740993
    client = in_process(store=stub.StubStore(first_id=first))
    given = client.post_json('/v1/pets', REX, status=201).json['id']
    assert given == first and int(float(given)) != given


def zero_and_negative_ids_not_found(server: stub.StubServer) -> None:
    assert statuses(with_rex(), '/v1/pets/0', '/v1/pets/-1') == [404, 404]


def auth_before_routing(server: stub.StubServer) -> None:
    logged: list[str] = []
    keyless = webtest.TestApp(stub.create_stub(admin=True, cors=True, access_log=logged.append))
    assert statuses(keyless, '/v1/nothing', '/v1/pets') == [401, 401]
    assert statuses(keyless, '/', '/v1/openapi.json', '/favicon.ico', '/__admin/health',
                    '/__admin/openapi.json') == [200, 200, 204, 200, 200]
    assert keyless.options('/v1/pets', headers=PREFLIGHT).status_int == 204
    assert not any('/favicon.ico' in line for line in logged)
    assert '/favicon.ico' not in [entry['path'] for entry in keyless.app.requests]
    client = with_rex()
    for path in ('/v1/pets', '/v1/pets/1', '/v1/openapi.json', '/'):
        assert client.head(path).status_int == client.get(path).status_int == 200


def plain_decimal_numbers(server: stub.StubServer) -> None:
    client = with_rex()
    assert len(client.get('/v1/pets?limit=005').json) == 1
    assert client.get('/v1/pets/001').json['id'] == 1
    assert statuses(client, *[f'/v1/pets?limit={number}' for number in (
        '%2B5', '-5', '%205', '5%20', '%D9%A5')], '/v1/pets/%2B1') == [400] * 6
    assert statuses(client, '/v1/pets/-1') == [404]


def paths_matched_as_sent(server: stub.StubServer) -> None:
    server.reset()
    server.add_pet('Rex', 1)
    status, pet = raw(server, GET % b'/v1/pets/%31')
    assert (status, pet['name']) == (200, 'Rex')
    for path in (b'/v1/pets%2F1', b'//v1/pets', b'/v1/./pets'):
        assert raw(server, GET % path)[0] == 404, path
    assert raw(server, GET % b'/v1/pets?status=%FF')[0] == 400


def bodies_over_a_mebibyte(server: stub.StubServer) -> None:
    client = in_process()
    body = json.dumps({'name': 'R' * 2**20, 'categoryId': 1}).encode()
    assert client.post('/v1/pets', body, content_type='application/json',
                       status='*').status_int == 413
    assert [client.get('/v1/pets').status_int for _ in range(200)] == [200] * 200  # no rate limit


def three_operations_only(server: stub.StubServer) -> None:
    client = in_process()
    assert client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 2**63 - 1}).status_int == 201
    # Methods that no exercise in tests/exercises adds: with one solved, this still holds.
    assert client.patch_json('/v1/pets/1', REX, status='*').status_int == 405
    assert client.delete('/v1/pets', status='*').status_int == 405


#: For each row of the choices: the phrases of its first cell (parted by ' ... ') that quote what
#: the stub does, and what acts them out.
CHOICES: dict[str, Callable[[stub.StubServer], None]] = {
    'has **no** `status` field': shown_without_status,
    'kept byte for byte': names_kept_byte_for_byte,
    '(`offset`, `limit=5&limit=6`) is a `400`, and `getPet` and `createPet` take none':
        no_pagination_beyond_limit,
    'Error `code` values': codes_in_snake_case,
    '`GET /store/orders` (named, not shown) answers `501`': orders_not_implemented,
    '`Deprecation: @1767225600` (1 January 2026': deprecation_from_2026,
    'Unknown body fields (`id`, `categoryID`, `staus`)': unknown_fields_and_numbers_refused,
    'holds no field but `id`, `name`, `categoryId` and `status`': pets_hold_four_fields,
    'Ids are int64s, from 1 unless `--first-id`': ids_past_a_double,
    '`petId` `0` and negative numbers get `404`': zero_and_negative_ids_not_found,
    'a `401` does not reveal ... `GET /favicon.ico` (`204`, not logged) ... `HEAD` works':
        auth_before_routing,
    '`limit=005` is 5); a sign (but `-` in a `petId`), a space or a non-ASCII digit is a `400`':
        plain_decimal_numbers,
    '`/v1/pets/%31` is pet 1, but `/v1/pets%2F1`, `//v1/pets` and `/v1/./pets` are `404`':
        paths_matched_as_sent,
    'bodies over 1 MiB get `413`': bodies_over_a_mebibyte,
    'there is no update': three_operations_only,
}


@pytest.mark.parametrize('choice', [row[0] for row in table_rows('promises.md', 'the stub')],
                         ids=lambda choice: ' '.join(re.findall(r'\w+', choice)[:4]))
def test_each_choice_where_the_api_is_silent_is_what_the_stub_does(server, choice):
    (check,) = [check for phrases, check in CHOICES.items() if quoted(phrases, choice)]
    check(server)


def quoted(phrases: str, text: str) -> bool:
    return all(phrase in text for phrase in phrases.split(' ... '))


def test_every_choice_acted_out_is_a_row_of_the_table():
    rows = [row[0] for row in table_rows('promises.md', 'the stub')]
    assert all(sum(quoted(phrases, row) for row in rows) == 1 for phrases in CHOICES)


# -- docs/other-languages.md: the admin endpoints --------------------------------------

def examples(cell: str) -> list[dict]:
    """The JSON objects a cell shows as code, in order."""
    found = []
    for text in re.findall(r'`(\{.*?\})`', cell):
        try:
            found.append(json.loads(text))
        except ValueError:  # a shape, not an example: {"field", "expected", "sent"}
            pass
    return found


def with_journal() -> webtest.TestApp:
    client = with_rex()
    client.post_json('/v1/pets', {'name': 'Bella', 'categoryId': '2'}, status=400)
    client.get('/v1/nothing', status=404)
    return client


def health(does: str) -> None:
    health = webtest.TestApp(stub.create_stub(admin=True)).get('/__admin/health', status=200).json
    assert '`200 {"status": "ok", "version": ..., "base_url": ...}`' in does
    assert health == {'status': 'ok', 'version': stub.__version__,
                      'base_url': 'http://localhost:80/v1'}


def reset_and_fixtures(does: str) -> None:
    assert 'as `reset()`: `204`' in does and '`201` with them, else `409 store_not_empty`' in does
    client = with_rex()
    assert client.post('/__admin/reset').status_int == 204
    assert client.get('/v1/pets').json == []
    loaded = client.post('/__admin/fixtures', status=201).json
    assert loaded == client.get('/v1/pets?limit=100').json and loaded
    assert client.post('/__admin/fixtures', status=409).json['code'] == 'store_not_empty'


def journal_since(does: str) -> None:
    (since, first), = re.findall(r'`\?since=(\d+)` begins with entry (\d+)', does)
    client = in_process()
    for _ in range(int(first)):
        client.get('/v1/pets')
    sequences = [entry['sequence'] for entry in client.get(f'/__admin/requests?since={since}').json]
    assert sequences == [int(first)]
    assert '`DELETE` empties it: `204`' in does
    assert client.delete('/__admin/requests').status_int == 204
    assert client.get('/__admin/requests').json == []


def count(does: str) -> None:
    assert '`200 {"count": N}`' in does
    client = with_journal()
    for example in examples(does):
        assert client.post_json('/__admin/requests/count', example).json == {'count': 2}


def assert_endpoint(does: str) -> None:
    assert '`200 {"matched": N}`, else `409 assertion_failed`' in does
    client = with_journal()
    assert client.post_json('/__admin/requests/assert', {'operation': 'createPet', 'times': 2},
                            ).json == {'matched': 2}
    refused = client.post_json('/__admin/requests/assert',
                               {'operation': 'createPet', 'json': REX, 'times': 0}, status=409).json
    assert refused['code'] == 'assertion_failed'
    assertion = refused['assertion']
    assert (assertion['expected']['json'], assertion['matched']) == (REX, 1)
    assert {'sequence', 'differences'} <= set(assertion['calls'][-1])
    assert '`{"field", "expected", "sent"}`' in does
    differences = [call['differences'] for call in assertion['calls'] if call['differences']]
    assert set(differences[0][0]) == {'field', 'expected', 'sent'}


def find(does: str) -> None:
    assert 'the entries a filter matches, oldest first' in does
    found = with_journal().post_json('/__admin/requests/find', {'operation': 'createPet'}).json
    assert [entry['status'] for entry in found] == [201, 400]


def unmatched(does: str) -> None:
    assert 'the entries no operation answered' in does
    assert [entry['path'] for entry in with_journal().get('/__admin/requests/unmatched').json] == [
        '/v1/nothing']


def faults(does: str) -> None:
    (fault,) = examples(does)
    client = in_process()
    queued = client.post_json('/__admin/faults', fault, status=201).json
    assert '`201` with its `id`' in does and queued == {'id': 1, **fault, 'seconds': None}
    assert 'a field a fault does not use is `null`' in does
    assert client.get('/__admin/faults').json == {'faults': [queued]}
    most = {'fault': 503, 'times': 1_000_000, 'after': 1_000_000}
    assert '`times` and `after` up to 1,000,000' in does
    client.post_json('/__admin/faults', most, status=201)
    client.post_json('/__admin/faults', {**most, 'times': 1_000_001}, status=400)
    assert 'at most 100 queued, else `409 too_many_faults`' in does
    assert 'cancels them: `204`' in does
    assert client.delete('/__admin/faults').status_int == 204
    assert client.get('/__admin/faults').json == {'faults': []}


def cancel_fault(does: str) -> None:
    assert does == 'cancels that fault: `204`, else `404 not_found`'
    client = in_process()
    queued = client.post_json('/__admin/faults', {'fault': 503}, status=201).json
    assert client.delete(f'/__admin/faults/{queued["id"]}').status_int == 204
    assert client.delete(f'/__admin/faults/{queued["id"]}', status=404).json['code'] == 'not_found'


def delay(does: str) -> None:
    delays = examples(does)
    client = in_process()
    assert '`200` with both fields' in does
    for delay in delays:
        assert client.post_json('/__admin/delay', delay, status=200).json == {'route': None,
                                                                                **delay}
    client.post_json('/__admin/delay', {'seconds': 60}, status=200)
    client.post_json('/__admin/delay', {'seconds': 60.5}, status=400)


def settings(does: str) -> None:
    assert does == 'the delays, how many faults are queued, the journal\'s size'
    assert set(in_process().get('/__admin/settings').json) == {
        'delays', 'faults_queued', 'journal_size'}


def coverage(does: str) -> None:
    assert '`DELETE` counts afresh: `204`' in does
    client = with_rex()
    assert client.get('/__admin/coverage').json['met'] == 1
    assert client.delete('/__admin/coverage').status_int == 204
    assert client.get('/__admin/coverage').json['met'] == 0


#: For each row of the admin endpoints, by its first cell: what acts out its second.
ADMIN_ENDPOINTS: dict[str, Callable[[str], None]] = {
    '`GET /__admin/health`': health,
    '`POST /__admin/reset`, `POST /__admin/fixtures`': reset_and_fixtures,
    '`GET`, `DELETE /__admin/requests`': journal_since,
    '`POST /__admin/requests/count`': count,
    '`POST /__admin/requests/assert`': assert_endpoint,
    '`POST /__admin/requests/find`': find,
    '`GET /__admin/requests/unmatched`': unmatched,
    '`POST`, `GET`, `DELETE /__admin/faults`': faults,
    '`DELETE /__admin/faults/{id}`': cancel_fault,
    '`POST /__admin/delay`': delay,
    '`GET /__admin/settings`': settings,
    '`GET`, `DELETE /__admin/coverage`': coverage,
}


@pytest.mark.parametrize('endpoint, does', [
    pytest.param(*row, id=row[0].strip('`')) for row in table_rows('other-languages.md', 'endpoint')])
def test_each_admin_endpoint_answers_what_its_row_says(endpoint, does):
    ADMIN_ENDPOINTS[endpoint](does)


def test_every_admin_endpoint_acted_out_is_a_row_of_the_table():
    assert list(ADMIN_ENDPOINTS) == [row[0] for row in table_rows('other-languages.md', 'endpoint')]


# -- docs/storage.md: the file and its log ---------------------------------------------

def test_the_database_storage_shows_is_one_the_stub_serves_and_tinydb_opens(tmp_path):
    (shown,) = page_fences('storage.md', 'json')
    path = tmp_path / 'petstore.json'
    path.write_text(shown)
    with tinydb.TinyDB(path) as database:
        assert [pet['name'] for pet in database.table('pets')] == ['Rex', 'Bella']
    client = in_process(store=stub.StubStore(path))
    assert client.get('/v1/pets').json == [{'id': 1, 'name': 'Rex', 'categoryId': 1},
                                           {'id': 3, 'name': 'Bella', 'categoryId': 2}]
    client.app.store.close()
    assert json.loads(path.read_text()) == json.loads(shown)  # a clean stop writes it so


def test_a_create_appends_the_log_line_storage_shows(tmp_path):
    (line,) = re.findall(r'`(\{"put": .*?\})`', PAGES[ROOT / 'docs' / 'storage.md'])
    path = tmp_path / 'petstore.json'
    path.write_text(page_fences('storage.md', 'json')[0])
    client = in_process(store=stub.StubStore(path))
    created = client.post_json('/v1/pets', {'name': 'Kiwi', 'categoryId': 3}).json
    logged = (tmp_path / 'petstore.json.log').read_text()
    client.app.store.close()
    assert created == {'id': 4, 'name': 'Kiwi', 'categoryId': 3}  # after the last id, 3
    assert logged == line.replace('{...}', json.dumps({'name': 'Kiwi', 'categoryId': 3})) + '\n'


# -- docs/code.md: the questions a student asks ----------------------------------------

def missing_key_refused(where: str) -> None:
    keyless = webtest.TestApp(stub.create_stub())
    assert statuses(keyless, '/v1/pets', '/v1/nothing', '/v1/pets/1/nothing') == [401] * 3


def limit_checked(where: str) -> None:
    client = in_process()
    assert statuses(client, '/v1/pets?limit=1', '/v1/pets?limit=100') == [200, 200]
    assert statuses(client, '/v1/pets?limit=0', '/v1/pets?limit=101', '/v1/pets?limit=1.5') == [
        400] * 3


def get_pet_deprecated(where: str) -> None:
    headers = with_rex().get('/v1/pets/1').headers
    assert headers['Deprecation'] == f'@{stub.DEPRECATED_SINCE}' and headers['Sunset'] == stub.SUNSET
    (get_pet,) = [operation for _, _, operation in stub.described_operations()
                  if operation['operationId'] == 'getPet']
    assert get_pet['deprecated'] is True


def staging_path(where: str) -> None:
    assert stub.build_parser().parse_args(['--staging']).staging is True
    client = make_client(stub.create_stub(base_path=stub.STAGING_BASE_PATH))
    assert statuses(client, '/staging/v1/pets', '/v1/pets') == [200, 404]


def category_past_int64(where: str) -> None:
    (message,) = re.findall(r'`400 invalid_body`, "(.*?)"', where)
    refused = in_process().post_json('/v1/pets', {'name': 'Rex', 'categoryId': 2**63},
                                     status=400).json
    assert refused['code'] == 'invalid_body' and refused['message'].startswith(message), refused


def demo_animals_go_in(where: str) -> None:
    app = stub.create_stub()
    assert [pet['name'] for pet in app.load_fixtures()] == [
        pet['name'] for pet in stub.read_fixtures()]
    with pytest.raises(stub.ApiError) as refused:
        app.load_fixtures()
    assert (refused.value.status_code, refused.value.code) == (409, 'store_not_empty')


#: For each question whose answer quotes what the stub does: what of the answer it pins.
QUESTIONS: dict[str, tuple[str, Callable[[str], None]]] = {
    'How is a missing key refused?': ('a `401`, whatever the path', missing_key_refused),
    'Where is `limit` checked?': ('a whole number from 1 to 100, else a `400`', limit_checked),
    'What marks `getPet` deprecated?': ('sends `Deprecation` and `Sunset`', get_pet_deprecated),
    'How is the staging path served?': ('`STAGING_BASE_PATH`, which `--staging` gives',
                                        staging_path),
    'What happens to a `categoryId` past int64?': ('`400 invalid_body`', category_past_int64),
    'How do the demo animals get in?': ('(`409 store_not_empty`)', demo_animals_go_in),
}


@pytest.mark.parametrize('question', QUESTIONS)
def test_each_answer_to_a_students_question_is_what_the_stub_does(question):
    (where,) = [where for asked, where in table_rows('code.md', 'question') if asked == question]
    quoted_answer, check = QUESTIONS[question]
    assert quoted_answer in where
    check(where)


def test_every_answer_quoting_a_status_or_a_header_is_pinned():
    rows = table_rows('code.md', 'question')
    quoting = {asked for asked, where in rows
               if re.search(r'`\d{3}|`(Deprecation|Sunset|Location|Link|Allow)`', where)}
    assert quoting <= set(QUESTIONS)


# -- docs/testing.md: the journal and the fixtures -------------------------------------

def test_a_journal_entry_has_the_fields_testing_lists_and_no_other():
    listed = [field for cell, _ in table_rows('testing.md', 'field')
              for field in re.findall(r'`(\w+)`', cell)]
    (entry,) = with_rex().app.requests
    assert sorted(entry) == sorted(listed)
    assert (entry['status'], entry['operation'], entry['truncated'], entry['unmatched']) == (
        201, 'createPet', False, False)


def test_the_key_the_fixtures_table_names_is_the_key_petstore_api_key_gives(petstore_api_key):
    (what,) = [what for fixture, _, what in table_rows('testing.md', 'fixture')
               if fixture == '`petstore_api_key`']
    assert what == f'the key the server accepts: `{petstore_api_key}`'


# -- docs/contributing.md: the commands ------------------------------------------------

def test_the_test_command_contributing_shows_is_the_readmes_and_the_one_ci_runs():
    command, checks = page_fences('contributing.md', 'sh')
    assert command.strip() in PAGES[ROOT / 'README.md'].splitlines()
    ci = (ROOT / '.ci' / 'run').read_text(encoding='utf-8').splitlines()
    assert command.strip() in ci
    assert [line.split('#')[0].strip() for line in checks.splitlines()] == [
        line for line in ci if line.startswith('.venv/bin/') and 'pytest' not in line]


# -- docs/other-languages.md: what the stub does with a ready file's PATH ----------------

def mark(pid: int) -> str:
    """A ready file as a stub of that pid writes it."""
    return f'{{"written_by": "petstore-stub pid {pid}", "url": "http://[::1]:9/v1", "pid": {pid}}}'


def ready_file_outcome(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: str) -> str:
    """What main() does with a --ready-file whose PATH holds ``held``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv('PORT', raising=False)
    path = tmp_path / 'ready.json'
    if held == 'an empty file':
        path.write_text('')
    elif held == 'a marked file of a stub that is gone':
        path.write_text(mark(gone_pid()))
    elif held == 'a marked file with its own pid':
        path.write_text(mark(os.getpid()))
    elif held == 'another file':
        path.write_text('{"theirs": true}')
    elif held == 'the mark of a stub still running':
        path.write_text(mark(os.getppid()))
    before = path.read_bytes() if path.exists() else None
    database = tmp_path / 'petstore.json'
    target = {'the database': database, 'its log': tmp_path / 'petstore.json.log'}.get(held, path)
    SERVED.clear()
    status: int | str | None
    try:
        status = stub.main(['--port', '0', '--db', str(database), '--ready-file', str(target)],
                           recording(lambda server: json.loads(target.read_text())['pid']))
    except SystemExit as exited:
        status = exited.code
    if status == 0:
        assert SERVED == [os.getpid()] and not target.exists()  # written, then removed at the stop
        return 'writes it'
    assert SERVED == [] and (path.read_bytes() if path.exists() else None) == before
    return f'stops with status `{status}`'


#: Each row of the table, by its first cell: what PATH holds, as the test makes it.
READY_FILE_HELD = {
    'nothing, or an empty file (from `mktemp`)': ['nothing', 'an empty file'],
    'a file marked by a stub whose process is gone (a killed one), or whose pid is its own (a '
    'container restarted)': ['a marked file of a stub that is gone',
                             'a marked file with its own pid'],
    'anything else: another file, a link, a device, the mark of a stub still running': [
        'another file', 'the mark of a stub still running'],
    'the database, or its log': ['the database', 'its log'],
}


@pytest.mark.parametrize('holds, does', table_rows('other-languages.md', 'PATH holds'),
                         ids=lambda cell: ' '.join(re.findall(r'\w+', cell)[:4]))
def test_what_the_stub_does_with_a_ready_file_is_what_its_row_says(tmp_path, monkeypatch,
                                                                   holds, does):
    for held in READY_FILE_HELD[holds]:
        done = ready_file_outcome(tmp_path, monkeypatch, held)
        assert does.startswith(done.replace('writes it', 'writes')), (held, done)
        for leftover in tmp_path.iterdir():
            leftover.unlink()


# -- docs/running.md: the table of flags -------------------------------------------------

def parsed(*argv: str) -> Any:
    """The flags as the command line parses ``argv``; a refused one raises SystemExit."""
    return stub.build_parser().parse_args(list(argv))


def refused(*argv: str) -> bool:
    try:
        parsed(*argv)
    except SystemExit:
        return True
    return False


#: What each row quotes of a flag's default or range, by the row's first flag, and how the
#: command line shows it.
FLAG_FACTS: dict[str, list[tuple[str, Callable[[], bool]]]] = {
    '--host': [('`127.0.0.1`', lambda: parsed().host == '127.0.0.1'),
               ('`8080`', lambda: parsed().port == 8080),
               ('`0` picks a free one', lambda: parsed('--port', '0').port == 0)],
    '--api-key': [('`petstore-demo-key`', lambda: stub.DEMO_API_KEY == 'petstore-demo-key')],
    '--db': [('`petstore.json` unless given', lambda: parsed().db == 'petstore.json')],
    '--staging': [('`/staging/v1`', lambda: stub.STAGING_BASE_PATH == '/staging/v1')],
    '--admin': [],
    '--send-timeout': [
        ('above 0, at most 3600; default 10', lambda: parsed().send_timeout == 10 and parsed(
            '--send-timeout', '3600').send_timeout == 3600 and refused('--send-timeout', '0')
            and refused('--send-timeout', '3600.5'))],
    '--tls': [],
    '--delay': [('SECONDS (0 to 60)', lambda: parsed('--delay', '60').delay and parsed(
        '--delay', '0').delay and refused('--delay', '60.5') and refused('--delay', '-1'))],
    '--first-id': [('(1 to 2^63 − 1;', lambda: parsed('--first-id', str(2 ** 63 - 1)).first_id
                    == 2 ** 63 - 1 and refused('--first-id', '0')
                    and refused('--first-id', str(2 ** 63)))],
}


@pytest.mark.parametrize('flags, does', table_rows('running.md', 'flag'),
                         ids=lambda cell: cell.split('`')[1] if '`' in cell else cell[:20])
def test_each_flag_s_default_and_range_is_what_its_row_of_the_table_says(monkeypatch, flags,
                                                                         does):
    monkeypatch.delenv('PORT', raising=False)
    names = re.findall(r'`(--[a-z-]+)', flags)
    usage = stub.build_parser().format_help()
    assert all(re.search(rf'(?<![\w-]){name}\b', usage) for name in names), names
    for quoted, holds in FLAG_FACTS[names[0]]:
        assert quoted in does, quoted
        assert holds(), quoted


def test_every_row_of_the_table_of_flags_has_its_facts_checked():
    assert [re.findall(r'`(--[a-z-]+)', flags)[0] for flags, _ in table_rows('running.md', 'flag')
            ] == list(FLAG_FACTS)
