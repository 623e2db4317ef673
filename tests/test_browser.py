"""What a browser demo and a hosted demo meet: CORS, the index at /, a proxy in front."""

import http.client
import json
import re

import pytest
import webtest

import petstore_stub as stub
from conftest import AUTH, PREFLIGHT, make_client


def request(server: stub.StubServer, method: str, path: str, headers: dict, body=None):
    connection = http.client.HTTPConnection('127.0.0.1', server.port, timeout=10)
    try:
        connection.request(method, path, body, headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


# -- CORS ------------------------------------------------------------------------

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
        status, headers, body = request(
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


# -- the index ---------------------------------------------------------------------

def test_the_index_needs_no_key_and_says_what_to_do_next():
    index = webtest.TestApp(stub.create_stub()).get('/', status=200).json
    assert index['name'].startswith('Pet Store API')
    assert index['version'] == '1.0.0'
    assert index['base_path'] == '/v1'
    assert index['openapi'] == '/v1/openapi.json'
    assert set(index['operations']) == {'listPets', 'createPet', 'getPet', 'listOrders'}
    assert 'Authorization: Bearer' in index['authentication']
    assert stub.DEMO_API_KEY in index['authentication']


def test_the_index_does_not_show_the_demo_key_when_it_is_not_accepted():
    index = webtest.TestApp(stub.create_stub(api_keys=['private'])).get('/').json
    assert stub.DEMO_API_KEY not in json.dumps(index)
    assert 'private' not in json.dumps(index)


def test_the_index_follows_staging():
    index = make_client(stub.create_stub(base_path='/staging/v1')).get('/').json
    assert index['openapi'] == '/staging/v1/openapi.json'
    assert index['operations']['createPet'] == 'POST /staging/v1/pets'


# -- behind a proxy ----------------------------------------------------------------

FORWARDED = {'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'pets.example.com',
             'X-Forwarded-Port': '443'}


def served_base_url(trust_proxy: bool) -> str:
    with stub.StubServer(stub.create_stub(trust_proxy=trust_proxy)) as server:
        _, _, body = request(server, 'GET', '/', FORWARDED)
    return json.loads(body)['base_url']


def test_forwarded_headers_are_ignored_by_default():
    assert served_base_url(trust_proxy=False).startswith('http://127.0.0.1:')


def test_trust_proxy_takes_the_public_scheme_and_host():
    assert served_base_url(trust_proxy=True) == 'https://pets.example.com/v1'


def test_location_is_a_path_so_it_stays_right_behind_any_proxy():
    with stub.serve() as server:
        status, headers, _ = request(server, 'POST', '/v1/pets',
                                     {**AUTH, **FORWARDED, 'Content-Type': 'application/json'},
                                     json.dumps({'name': 'Rex', 'categoryId': 1}))
    assert (status, headers['Location']) == (201, '/v1/pets/1')


# -- the page at / -------------------------------------------------------------------

BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'


@pytest.mark.parametrize('accept, html', [
    pytest.param(BROWSER_ACCEPT, True, id='a browser'),
    pytest.param('text/html', True, id='text/html'),
    pytest.param('*/*', False, id="curl's */*"),
    pytest.param('', False, id='no Accept'),
    pytest.param('application/json', False, id='JSON'),
    pytest.param('application/json, text/html;q=0.5', False, id='JSON first'),
    pytest.param('application/xml, text/html', False, id='HTML not first'),
])
def test_a_browser_gets_the_page_and_everyone_else_the_json_index(accept, html):
    response = webtest.TestApp(stub.create_stub()).get('/', headers={'Accept': accept})
    assert response.content_type == ('text/html' if html else 'application/json')
    assert response.headers['Vary'] == 'Accept'
    assert ('<!doctype html>' in response.text) is html


def test_the_page_names_its_base_path_and_offers_the_demo_key_only_on_loopback():
    app = stub.create_stub(base_path='/staging/v1', admin=True)
    local = webtest.TestApp(app, extra_environ={'REMOTE_ADDR': '127.0.0.1'})
    remote = webtest.TestApp(app, extra_environ={'REMOTE_ADDR': '203.0.113.9'})
    page = local.get('/', headers={'Accept': 'text/html'}).text
    assert ('{"basePath": "/staging/v1", "demoKey": "petstore-demo-key", "admin": true}'
            in page)
    assert stub.DEMO_API_KEY not in remote.get('/', headers={'Accept': 'text/html'}).text
    private = webtest.TestApp(stub.create_stub(api_keys=['s3cret']))
    page = private.get('/', headers={'Accept': 'text/html'}, extra_environ={
        'REMOTE_ADDR': '127.0.0.1'}).text
    assert '"demoKey": null' in page and 's3cret' not in page


def test_the_page_is_one_file_that_fetches_nothing_from_elsewhere():
    page = stub.data_path('index.html').read_text(encoding='utf-8')
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert '@import' not in page and 'url(' not in page


def test_a_browser_visit_is_not_in_the_journal():
    app = stub.create_stub()
    client = webtest.TestApp(app)
    client.get('/', headers={'Accept': BROWSER_ACCEPT})
    client.get('/favicon.ico', status=204)
    client.get('/')
    assert [(entry['path'], entry['operation']) for entry in app.requests] == [('/', 'index')]
