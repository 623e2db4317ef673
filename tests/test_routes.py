"""The HTTP API in-process through WebTest: routes, auth, validation and the Error body."""

import json
import re

import pytest
import webtest

import petstore_stub as stub
from conftest import AUTH, METHODS, NOT_ALLOWED, make_client

REX = {'name': 'Rex', 'categoryId': 1, 'status': 'available'}


def add(client, **pet):
    return client.post_json('/v1/pets', pet, status=201).json


def assert_error(response, status: int, code: str) -> dict:
    """The spec's Error body, exactly its three fields, as JSON."""
    assert response.status_int == status
    assert response.content_type == 'application/json'
    assert set(response.json) == {'code', 'message', 'status'}
    assert response.json['code'] == code
    assert response.json['status'] == status
    assert response.json['message']
    return response.json


@pytest.fixture
def populated(client):
    """Seven pets: ids 1..7, statuses cycling available, pending, sold, with one lacking a status."""
    statuses = ['available', 'pending', 'sold', None, 'available', 'pending', 'sold']
    for number, status in enumerate(statuses, start=1):
        pet = {'name': f'pet{number}', 'categoryId': number}
        if status:
            pet['status'] = status
        add(client, **pet)
    return client


# -- auth ------------------------------------------------------------------------

#: Every operation's method and path (a petId of 1), as the app routes them.
ROUTES = [(route.method, re.sub('<[^>]+>', '1', route.rule)) for route in stub.create_app().routes]


@pytest.mark.parametrize('method, path', ROUTES)
@pytest.mark.parametrize('headers', [
    pytest.param({}, id='no header'),
    pytest.param({'Authorization': 'Basic cGV0OnN0b3Jl'}, id='Basic'),
    pytest.param({'Authorization': 'Bearer '}, id='empty token'),
])
def test_every_route_without_credentials_is_401_with_a_challenge(app, method, path, headers):
    response = webtest.TestApp(app).request(path, method=method, headers=headers, status='*')
    assert_error(response, 401, 'unauthorized')
    assert response.headers['WWW-Authenticate'] == 'Bearer realm="petstore"'


@pytest.mark.parametrize('method, path', ROUTES)
def test_every_route_with_a_wrong_key_is_401_invalid_token(app, method, path):
    response = webtest.TestApp(app).request(
        path, method=method, headers={'Authorization': 'Bearer nope'}, status='*')
    assert_error(response, 401, 'invalid_token')
    assert response.headers['WWW-Authenticate'] == 'Bearer realm="petstore", error="invalid_token"'


def test_auth_is_checked_before_the_body(app):
    api = webtest.TestApp(app)
    response = api.post('/v1/pets', 'not json', headers={'Content-Type': 'text/plain'}, status='*')
    assert_error(response, 401, 'unauthorized')
    assert make_client(app).get('/v1/pets').json == []


def test_auth_is_checked_before_routing_so_unknown_paths_do_not_leak(app):
    response = webtest.TestApp(app).get('/v1/secret', status='*')
    assert_error(response, 401, 'unauthorized')


def test_lower_case_bearer_scheme_is_accepted(app):
    api = webtest.TestApp(app)
    assert api.get('/v1/pets', headers={'Authorization': f'bearer {stub.DEMO_API_KEY}'}).json == []


def test_several_keys_are_each_accepted():
    api = webtest.TestApp(stub.create_stub(api_keys=['alpha', 'beta']))
    for key in ('alpha', 'beta'):
        api.get('/v1/pets', headers={'Authorization': f'Bearer {key}'}, status=200)
    api.get('/v1/pets', headers=AUTH, status=401)


# -- listPets --------------------------------------------------------------------

def test_list_is_empty_at_first(client):
    response = client.get('/v1/pets', status=200)
    assert response.content_type == 'application/json'
    assert response.json == []


def test_list_returns_pets_in_ascending_id_order(populated):
    pets = populated.get('/v1/pets').json
    assert [pet['id'] for pet in pets] == [1, 2, 3, 4, 5, 6, 7]
    assert pets[0] == {'id': 1, 'name': 'pet1', 'categoryId': 1, 'status': 'available'}
    assert pets[3] == {'id': 4, 'name': 'pet4', 'categoryId': 4}


def test_list_limit_caps_the_count(populated):
    assert [pet['id'] for pet in populated.get('/v1/pets?limit=3').json] == [1, 2, 3]


def test_list_default_limit_is_20(client):
    for number in range(25):
        add(client, name=f'p{number}', categoryId=1)
    assert len(client.get('/v1/pets').json) == 20
    assert len(client.get('/v1/pets?limit=100').json) == 25


@pytest.mark.parametrize('status, ids', [
    ('available', [1, 5]), ('pending', [2, 6]), ('sold', [3, 7]),
])
def test_list_status_filter_keeps_only_that_status(populated, status, ids):
    assert [pet['id'] for pet in populated.get(f'/v1/pets?status={status}').json] == ids


def test_list_limit_applies_after_the_status_filter(populated):
    pets = populated.get('/v1/pets?status=sold&limit=1').json
    assert [pet['id'] for pet in pets] == [3]
    pets = populated.get('/v1/pets?limit=2&status=pending').json
    assert [pet['id'] for pet in pets] == [2, 6]


@pytest.mark.parametrize('query', [
    'limit=0', 'limit=101', 'limit=-1', 'limit=abc', 'limit=1.5', 'limit=1e2', 'limit=',
    'limit=' + '9' * 30, 'status=Sold', 'status=lost', 'status=', 'limt=5', 'offset=20',
    'limit=5&limit=6',
])
def test_list_with_a_bad_query_is_400(populated, query):
    assert_error(populated.get(f'/v1/pets?{query}', status='*'), 400, 'invalid_parameter')


# -- createPet -------------------------------------------------------------------

def test_create_answers_201_with_the_pet_and_its_location(client):
    response = client.post_json('/v1/pets', REX, status=201)
    assert response.json == {'id': 1, **REX}
    assert response.headers['Location'] == '/v1/pets/1'
    assert client.get('/v1/pets/1').json == response.json


def test_create_without_status_stores_no_status(client):
    pet = add(client, name='Mystery', categoryId=2)
    assert pet == {'id': 1, 'name': 'Mystery', 'categoryId': 2}
    assert 'status' not in client.get('/v1/pets').json[0]


def test_create_keeps_the_name_exactly_as_sent(client):
    name = '  Chloé 🐈\u200d⬛ "the cat" \n'
    assert add(client, name=name, categoryId=1)['name'] == name
    assert client.get('/v1/pets/1').json['name'] == name


def test_create_assigns_increasing_ids(client):
    assert [add(client, name=f'p{n}', categoryId=1)['id'] for n in range(3)] == [1, 2, 3]


def test_create_accepts_json_with_a_charset(client):
    client.post('/v1/pets', json.dumps(REX), content_type='application/json; charset=utf-8',
                status=201)


def test_create_names_the_unknown_field(client):
    response = client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1, 'staus': 'sold'},
                                status=400)
    assert "'staus'" in response.json['message']


@pytest.mark.parametrize('content_type', [
    'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin-1',
])
def test_create_with_another_content_type_is_415(client, content_type):
    response = client.post('/v1/pets', json.dumps(REX), content_type=content_type, status='*')
    assert_error(response, 415, 'unsupported_media_type')
    assert client.get('/v1/pets').json == []


def test_create_with_a_body_over_1_mib_is_413(client):
    body = json.dumps({'name': 'x' * stub.MAX_BODY_BYTES, 'categoryId': 1})
    response = client.post('/v1/pets', body, content_type='application/json', status='*')
    assert_error(response, 413, 'payload_too_large')
    assert client.get('/v1/pets').json == []


def test_create_with_a_body_just_under_1_mib_is_accepted(client):
    name = 'x' * (stub.MAX_BODY_BYTES - 40)
    assert add(client, name=name, categoryId=1)['name'] == name


# -- getPet ----------------------------------------------------------------------

def test_get_returns_the_pet_with_deprecation_headers(populated):
    response = populated.get('/v1/pets/2', status=200)
    assert response.json == {'id': 2, 'name': 'pet2', 'categoryId': 2, 'status': 'pending'}
    assert response.headers['Deprecation'] == f'@{stub.DEPRECATED_SINCE}'
    assert response.headers['Sunset'] == 'Thu, 05 Dec 2030 00:00:00 GMT'
    assert response.headers['Link'] == '</v1/pets>; rel="successor-version"'


@pytest.mark.parametrize('pet_id', ['8', '0', '-1', str(2 ** 63 - 1), str(-(2 ** 63))])
def test_get_an_int64_that_is_no_pet_is_404(populated, pet_id):
    assert_error(populated.get(f'/v1/pets/{pet_id}', status='*'), 404, 'not_found')


@pytest.mark.parametrize('pet_id', ['abc', '1.5', '1e3', str(2 ** 63), '9' * 30, '%20'])
def test_get_a_pet_id_that_is_not_int64_is_400(populated, pet_id):
    assert_error(populated.get(f'/v1/pets/{pet_id}', status='*'), 400, 'invalid_parameter')


# -- the rest of the surface ----------------------------------------------------

def test_store_orders_is_501_not_implemented(client):
    assert_error(client.get('/v1/store/orders', status='*'), 501, 'not_implemented')


@pytest.mark.parametrize('path', ['/v1/nothing', '/pets', '/v1/pets/1/owner', '/v2/pets', '/index'])
def test_unknown_path_is_a_json_404(client, path):
    response = client.get(path, status='*')
    assert_error(response, 404, 'not_found')
    assert '<' not in response.text


@pytest.mark.parametrize('method, path', NOT_ALLOWED)
def test_wrong_method_is_a_json_405_with_allow(client, method, path):
    response = client.request(path, method=method, status='*')
    assert_error(response, 405, 'method_not_allowed')
    assert set(response.headers['Allow'].replace(' ', '').split(',')) >= METHODS[path]


def test_a_crash_is_a_json_500_without_a_traceback(client, app, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError('secret internals')

    monkeypatch.setattr(stub, 'parse_limit', broken)
    app.catchall = True
    response = client.get('/v1/pets', status='*', expect_errors=True)
    assert_error(response, 500, 'internal_error')
    assert 'secret internals' not in response.text
    assert 'Traceback' not in response.text


def test_staging_serves_every_route_under_staging_v1():
    client = make_client(stub.create_stub(base_path=stub.STAGING_BASE_PATH))
    response = client.post_json('/staging/v1/pets', REX, status=201)
    assert response.headers['Location'] == '/staging/v1/pets/1'
    assert client.get('/staging/v1/pets').json == [{'id': 1, **REX}]
    get = client.get('/staging/v1/pets/1')
    assert get.headers['Link'] == '</staging/v1/pets>; rel="successor-version"'
    client.get('/staging/v1/store/orders', status=501)
    assert_error(client.get('/v1/pets', status='*'), 404, 'not_found')


def test_location_includes_the_mount_point(client):
    client.extra_environ['SCRIPT_NAME'] = '/api'
    response = client.post_json('/api/v1/pets', REX, status=201)
    assert response.headers['Location'] == '/api/v1/pets/1'


def test_access_log_has_one_line_per_request(tmp_path):
    lines = []
    client = make_client(stub.create_stub(access_log=lines.append))
    client.get('/v1/pets?limit=5')
    client.post_json('/v1/pets', REX)
    client.get('/v1/nothing', status=404)
    assert [line.split(' ', 3)[3].rsplit(' ', 1)[0] for line in lines] == [
        'GET /v1/pets?limit=5 200', 'POST /v1/pets 201', 'GET /v1/nothing 404']
    assert all(re.fullmatch(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ .* \d+\.\dms', line) for line in lines)


def test_two_apps_do_not_share_a_store():
    first, second = make_client(stub.create_stub()), make_client(stub.create_stub())
    add(first, **REX)
    assert second.get('/v1/pets').json == []


def test_create_app_alone_is_the_plain_api_the_fixture_server_wraps():
    api = webtest.TestApp(stub.create_app(stub.PetStore()))
    api.authorization = ('Bearer', stub.DEMO_API_KEY)
    assert api.post_json('/v1/pets', REX, status=201).json == {'id': 1, **REX}
    assert api.get('/v1/pets/1').json == {'id': 1, **REX}
    assert_error(api.get('/v1/pets?limit=0', status='*'), 400, 'invalid_parameter')
    assert_error(api.get('/__admin/requests', status='*'), 404, 'not_found')  # no admin
    api.authorization = None
    assert_error(api.get('/', status='*'), 401, 'unauthorized')  # no documents either


@pytest.mark.parametrize('base_path, path', [(stub.STAGING_BASE_PATH, '/v1/pets'),
                                             (stub.BASE_PATH, '/pets')])
def test_a_404_outside_the_base_path_says_where_the_api_is(base_path, path):
    client = make_client(stub.create_stub(base_path=base_path))
    message = client.get(path, status=404).json['message']
    assert message == f'nothing is at {path}; the API is under {base_path}'
    assert client.get(f'{base_path}/nope', status=404).json['message'] == (
        f'nothing is at {base_path}/nope')
