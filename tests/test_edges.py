"""Hostile input: every refusal is the spec's Error body, and changes nothing.

Two tables: requests a client library can send, run in-process through
WebTest; and raw bytes on a socket to a real server, for what only a broken
or hostile client sends.
"""

from __future__ import annotations

import json

import pytest
import webtest

import petstore_stub as stub
from conftest import AUTH, make_client

JSON = 'application/json'
NEW_PET = {'name': 'Rex', 'categoryId': 1}


def body(text: str | bytes) -> bytes:
    return text.encode('utf-8') if isinstance(text, str) else text


def pet_body(**fields) -> bytes:
    return json.dumps({**NEW_PET, **fields}).encode()


# What a client library can send: (method, path, headers, body, status, code).
BAD_BODIES = [
    pytest.param(b'[' * 500_000, id='500,000 ['),
    pytest.param(b'{"a":' * 100_000, id='100,000 nested objects'),
    pytest.param(b'[' * 5_000 + b']' * 5_000, id='5,000 closed arrays'),
    pytest.param(b'', id='empty'),
    pytest.param(b'{"name": "Rex", "categoryId": 1', id='an object not closed'),
    pytest.param(b'   \n', id='blank'),
    pytest.param(b'null', id='null'),
    pytest.param(b'[]', id='an array'),
    pytest.param(b'"Rex"', id='a string'),
    pytest.param(b'1', id='a number'),
    pytest.param(b'{"name": "Rex"}', id='no categoryId'),
    pytest.param(b'{"categoryId": 1}', id='no name'),
    pytest.param(pet_body(name=''), id='empty name'),
    pytest.param(pet_body(name=5), id='name a number'),
    pytest.param(pet_body(name=None), id='name null'),
    pytest.param(pet_body(name=['Rex']), id='name an array'),
    pytest.param(pet_body(name={'first': 'Rex'}), id='name an object'),
    pytest.param(pet_body(categoryId='1'), id='categoryId a string'),
    pytest.param(pet_body(categoryId=1.0), id='categoryId 1.0'),
    pytest.param(pet_body(categoryId=1.5), id='categoryId 1.5'),
    pytest.param(pet_body(categoryId=True), id='categoryId true'),
    pytest.param(pet_body(categoryId=None), id='categoryId null'),
    pytest.param(pet_body(categoryId=2 ** 63), id='categoryId 2^63'),
    pytest.param(pet_body(categoryId=-2 ** 63 - 1), id='categoryId -2^63-1'),
    pytest.param(b'{"name": "Rex", "categoryId": 1e3}', id='categoryId 1e3'),
    pytest.param(b'{"name": "Rex", "categoryId": NaN}', id='categoryId NaN'),
    pytest.param(b'{"name": "Rex", "categoryId": Infinity}', id='Infinity'),
    pytest.param(b'{"name": "Rex", "categoryId": ' + b'9' * 5000 + b'}', 
                 id='categoryId of 5,000 digits'),
    pytest.param(pet_body(status='lost'), id='status unknown'),
    pytest.param(pet_body(status='Available'), id='status capitalised'),
    pytest.param(pet_body(status=None), id='status null'),
    pytest.param(pet_body(id=5), id='an id'),
    pytest.param(pet_body(categoryID=1), id='a misspelt field'),
    pytest.param(b'{"name": "Rex", "name": "Max", "categoryId": 1}', 
                 id='a key twice'),
    pytest.param(pet_body() + b' x', id='trailing data'),
    pytest.param(b'{}{}', id='two objects'),
    pytest.param(b'{"name": "R\xffx", "categoryId": 1}', id='not UTF-8'),
    pytest.param(json.dumps(NEW_PET).encode('utf-16'), id='UTF-16'),
    pytest.param(b'\xef\xbb\xbf' + pet_body(), id='a byte-order mark'),
    pytest.param(b'{"name": "\\ud800", "categoryId": 1}', id='a lone surrogate'),
    pytest.param(b'{"name": "R\x00x", "categoryId": 1}', id='a raw NUL'),
    pytest.param(b'{"name": "Rex", "categoryId": 1} // pet', id='a comment'),
    pytest.param(b"{'name': 'Rex', 'categoryId': 1}", id='single quotes'),
    pytest.param(b'{"name": "Rex", "categoryId": 1,}', id='a trailing comma'),
]

BAD_CONTENT_TYPES = [
    pytest.param('text/plain', id='text/plain'),
    pytest.param('application/json; charset=latin-1', id='latin-1'),
    pytest.param('application/jsonp', id='jsonp'),
    pytest.param('application/x-www-form-urlencoded', id='a form'),
    pytest.param('multipart/form-data; boundary=x', id='multipart'),
    pytest.param('', id='none'),
]

BAD_PATHS = [
    # (method, path, status, code)
    pytest.param('GET', '/v1/pets/abc', 400, 'invalid_parameter', id='petId abc'),
    pytest.param('GET', '/v1/pets/1.5', 400, 'invalid_parameter', id='petId 1.5'),
    pytest.param('GET', '/v1/pets/+1', 400, 'invalid_parameter', id='petId +1'),
    pytest.param('GET', '/v1/pets/1e3', 400, 'invalid_parameter', id='petId 1e3'),
    pytest.param('GET', '/v1/pets/0x1', 400, 'invalid_parameter', id='petId 0x1'),
    pytest.param('GET', '/v1/pets/%20', 400, 'invalid_parameter', id='petId a space'),
    pytest.param('GET', '/v1/pets/%D9%A3', 400, 'invalid_parameter', id='petId an Arabic 3'),
    pytest.param('GET', '/v1/pets/9223372036854775808', 400, 'invalid_parameter',
                 id='petId 2^63'),
    pytest.param('GET', '/v1/pets/-9223372036854775809', 400, 'invalid_parameter',
                 id='petId -2^63-1'),
    pytest.param('GET', '/v1/pets/' + '1' * 5000, 400, 'invalid_parameter',
                 id='petId of 5,000 digits'),
    pytest.param('GET', '/v1/pets/999', 404, 'not_found', id='petId 999'),
    pytest.param('GET', '/v1/pets/0', 404, 'not_found', id='petId 0'),
    pytest.param('GET', '/v1/pets/-1', 404, 'not_found', id='petId -1'),
    pytest.param('GET', '/v1/pets/', 404, 'not_found', id='a trailing slash'),
    pytest.param('GET', '/v1/pet', 404, 'not_found', id='pet'),
    pytest.param('GET', '/v1/PETS', 404, 'not_found', id='PETS'),
    pytest.param('GET', '/v2/pets', 404, 'not_found', id='v2'),
    pytest.param('GET', '/v1/pets/1/name', 404, 'not_found', id='below a pet'),
    pytest.param('GET', '/v1//pets', 404, 'not_found', id='an empty segment'),
    pytest.param('GET', '/v1/pets.json', 404, 'not_found', id='an extension'),
    pytest.param('GET', '/v1/pe%FFts', 404, 'not_found', id='not UTF-8'),
    pytest.param('DELETE', '/v1/pets', 405, 'method_not_allowed', id='DELETE'),
    pytest.param('PUT', '/v1/pets/1', 405, 'method_not_allowed', id='PUT'),
    pytest.param('PATCH', '/v1/pets', 405, 'method_not_allowed', id='PATCH'),
    pytest.param('POST', '/v1/pets/1', 405, 'method_not_allowed', id='POST a pet'),
    pytest.param('OPTIONS', '/v1/pets', 405, 'method_not_allowed', id='OPTIONS without --cors'),
    pytest.param('GET', '/v1/store/orders', 501, 'not_implemented', id='orders'),
    pytest.param('GET', '/v1/pets/1?foo=1', 400, 'invalid_parameter', id='getPet with a query'),
    pytest.param('GET', '/v1/pets/1?%FF=1', 400, 'invalid_parameter',
                 id='getPet with a query not UTF-8'),
    pytest.param('POST', '/v1/pets?name=Rex', 400, 'invalid_parameter',
                 id='createPet with a query'),
]

BAD_QUERIES = [
    pytest.param('limit=0', id='limit 0'),
    pytest.param('limit=101', id='limit 101'),
    pytest.param('limit=-1', id='limit -1'),
    pytest.param('limit=abc', id='limit abc'),
    pytest.param('limit=', id='limit empty'),
    pytest.param('limit', id='limit without ='),
    pytest.param('limit=1.5', id='limit 1.5'),
    pytest.param('limit=%2B5', id='limit +5'),
    pytest.param('limit=+5', id='limit space 5'),
    pytest.param('limit=1e2', id='limit 1e2'),
    pytest.param('limit=99999999999999999999999', id='limit huge'),
    pytest.param('limit=5&limit=6', id='limit twice'),
    pytest.param('status=lost', id='status unknown'),
    pytest.param('status=AVAILABLE', id='status upper case'),
    pytest.param('status=', id='status empty'),
    pytest.param('status=%C3%A9', id='status é'),
    pytest.param('status=%FF', id='status not UTF-8'),
    pytest.param('status=available&status=sold', id='status twice'),
    pytest.param('offset=10', id='offset'),
    pytest.param('page=2', id='page'),
    pytest.param('Limit=5', id='Limit'),
    pytest.param('%FF=1', id='a name not UTF-8'),
    pytest.param('x', id='a bare name'),
]

BAD_CREDENTIALS = [
    pytest.param({}, 'unauthorized', id='none'),
    pytest.param({'Authorization': 'Basic cGV0OnN0b3Jl'}, 'unauthorized', id='Basic'),
    pytest.param({'Authorization': 'Bearer'}, 'unauthorized', id='Bearer alone'),
    pytest.param({'Authorization': 'Bearer wrong'}, 'invalid_token', id='a wrong key'),
    pytest.param({'Authorization': f'Bearer {stub.DEMO_API_KEY}x'}, 'invalid_token',
                 id='the key and more'),
    pytest.param({'Authorization': f'Bearer {stub.DEMO_API_KEY} extra'}, 'invalid_token',
                 id='the key and a word'),
    pytest.param({'Authorization': f'Bearer {stub.DEMO_API_KEY[:-1]}'}, 'invalid_token',
                 id='the key less a letter'),
    pytest.param({'Authorization': 'Bearer ' + 'k' * 10_000}, 'invalid_token', id='10 KB key'),
    pytest.param({'Authorization': 'Bearer caf\xe9'}, 'invalid_token', id='a Latin-1 key'),
    pytest.param({'Authorization': 'Token petstore-demo-key'}, 'unauthorized', id='Token'),
    pytest.param({'Authorization': f'Bearer {stub.DEMO_API_KEY}\xa0'}, 'invalid_token',
                 id='the key and a no-break space'),
    pytest.param({'Authorization': f'\x85Bearer {stub.DEMO_API_KEY}'}, 'unauthorized',
                 id='a NEL before the scheme'),
]


@pytest.fixture
def api() -> webtest.TestApp:
    """A stub with three pets, in-process."""
    client = make_client(stub.create_stub())
    for name in ('Rex', 'Bella', 'Max'):
        client.post_json('/v1/pets', {'name': name, 'categoryId': 1})
    return client


def snapshot(api: webtest.TestApp) -> list[dict]:
    return api.get('/v1/pets?limit=100', headers=AUTH).json


def assert_error_body(response, status: int, code: str) -> dict:
    assert response.status_int == status
    assert response.content_type == JSON
    error = json.loads(response.body)
    assert set(error) == {'code', 'message', 'status'}
    assert (error['status'], error['code']) == (status, code)
    assert error['message']
    return error


@pytest.mark.parametrize('raw', BAD_BODIES)
def test_a_bad_body_is_a_400_and_stores_nothing(api, raw):
    before = snapshot(api)
    response = api.post('/v1/pets', raw, headers={'Content-Type': JSON}, status='*')
    assert_error_body(response, 400, 'invalid_body')
    assert snapshot(api) == before
    # Nor does it use up an id.
    assert api.post('/v1/pets', pet_body(), headers={'Content-Type': JSON}).json['id'] == 4


def test_a_body_over_a_mebibyte_is_a_413_and_stores_nothing(api):
    before = snapshot(api)
    response = api.post('/v1/pets', b' ' * (stub.MAX_BODY_BYTES + 1),
                        headers={'Content-Type': JSON}, status='*')
    assert_error_body(response, 413, 'payload_too_large')
    assert snapshot(api) == before


@pytest.mark.parametrize('content_type', BAD_CONTENT_TYPES)
def test_a_body_that_is_not_json_is_a_415_and_stores_nothing(api, content_type):
    before = snapshot(api)
    response = api.post('/v1/pets', pet_body(), headers={'Content-Type': content_type},
                        status='*')
    assert_error_body(response, 415, 'unsupported_media_type')
    assert snapshot(api) == before


@pytest.mark.parametrize('method, path, status, code', BAD_PATHS)
def test_a_bad_path_or_method_gets_its_error_and_changes_nothing(api, method, path, status, code):
    before = snapshot(api)
    response = api.request(path, method=method, status='*')
    assert_error_body(response, status, code)
    assert snapshot(api) == before


@pytest.mark.parametrize('query', BAD_QUERIES)
def test_a_bad_query_is_a_400_and_changes_nothing(api, query):
    before = snapshot(api)
    response = api.get(f'/v1/pets?{query}', status='*')
    assert_error_body(response, 400, 'invalid_parameter')
    assert snapshot(api) == before


@pytest.mark.parametrize('headers, code', BAD_CREDENTIALS)
@pytest.mark.parametrize('method, path', [('GET', '/v1/pets'), ('POST', '/v1/pets'),
                                          ('GET', '/v1/pets/1'), ('GET', '/v1/nowhere')])
def test_bad_credentials_are_a_401_before_anything_else(method, path, headers, code):
    app = stub.create_stub()
    client = webtest.TestApp(app)
    response = client.request(path, method=method, headers={**headers, 'Content-Type': JSON},
                              body=pet_body() if method == 'POST' else b'', status='*')
    assert_error_body(response, 401, code)
    assert len(app.store) == 0


# -- one rule per input ----------------------------------------------------------

@pytest.mark.parametrize('path', ['/v1/pets/1', '/v1/pets/01', '/v1/pets/0000000000000000000001',
                                  '/v1/pets/%31'])
def test_a_pet_id_is_its_number_however_many_leading_zeros(api, path):
    assert api.get(path).json['name'] == 'Rex'


@pytest.mark.parametrize('limit', ['2', '02', '0002', '00002', '000000000000000000000002'])
def test_a_limit_is_its_number_however_many_leading_zeros(api, limit):
    assert len(api.get(f'/v1/pets?limit={limit}').json) == 2


def test_a_status_is_read_as_utf8_and_shown_as_sent(api):
    message = api.get('/v1/pets?status=%C3%A9', status=400).json['message']
    assert "got 'é'" in message


@pytest.mark.parametrize('path', ['/', '/v1/openapi.json', '/favicon.ico'])
@pytest.mark.parametrize('method', ['GET', 'HEAD'])
def test_the_public_documents_need_no_key_for_head_as_for_get(method, path):
    response = webtest.TestApp(stub.create_stub()).request(path, method=method, status='*')
    assert response.status_int in (200, 204)


def test_the_browsers_favicon_request_gets_a_204_and_no_log_line():
    lines = []
    client = webtest.TestApp(stub.create_stub(access_log=lines.append))
    response = client.get('/favicon.ico', status=204)
    assert response.body == b''
    assert lines == []


# -- raw bytes on a socket ------------------------------------------------------------
