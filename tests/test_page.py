"""The page at / and the JSON index beside it, and the documents' security headers: what a
browser is sent, read without one (test_browser.py drives a real one)."""

import base64
import hashlib
import json
import re

import pytest
import webtest

import petstore_stub as stub
from conftest import make_client, send

# -- the index ---------------------------------------------------------------------

def test_the_index_needs_no_key_and_says_what_to_do_next():
    index = webtest.TestApp(stub.create_stub()).get('/', status=200).json
    assert index['name'].startswith('Pet Store API')
    assert index['version'] == '1.0.0'
    assert index['base_path'] == '/v1'
    assert index['openapi'] == '/v1/openapi.json'
    described = json.loads(stub.data_path('openapi.json').read_text())['paths']
    assert list(index['operations']) == [operation['operationId'] for methods in
                                         described.values() for operation in methods.values()]
    assert 'Authorization: Bearer' in index['authentication']
    assert stub.DEMO_API_KEY in index['authentication']


@pytest.mark.parametrize('base_path', ['/v1', '/staging/v1'])
def test_docs_with_no_key_leads_to_the_page_and_names_under_the_base_path_stay_behind_the_key(
        base_path):
    app = stub.create_stub(base_path=base_path, admin=True)
    visitor = webtest.TestApp(app)
    docs = visitor.get('/docs', status=302)
    assert docs.headers['Location'] in ('/', 'http://localhost:80/')
    assert 'openapi-link' in visitor.get('/', headers={'Accept': 'text/html'}).text
    for path in (f'{base_path}/docs', '/swagger', '/docs/'):
        assert visitor.get(path, status=401).json['code'] == 'unauthorized'
    # A person looking for the documentation is no call; the three refused are.
    assert [entry['path'] for entry in app.requests] == [f'{base_path}/docs', '/swagger', '/docs/']


def test_the_index_does_not_show_the_demo_key_when_it_is_not_accepted():
    index = webtest.TestApp(stub.create_stub(api_keys=['private'])).get('/').json
    assert stub.DEMO_API_KEY not in json.dumps(index)
    assert 'private' not in json.dumps(index)


def test_the_index_follows_staging():
    index = make_client(stub.create_stub(base_path='/staging/v1')).get('/').json
    assert index['openapi'] == '/staging/v1/openapi.json'
    assert index['operations']['createPet'].startswith('POST /staging/v1/pets: ')
    assert index['operations']['getPet'].endswith(f'(deprecated, sunset {stub.SUNSET})')


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
    settings = re.search(r'<script id="settings" type="application/json">(.*?)</script>', page)
    assert json.loads(settings[1]) == {
        'basePath': '/staging/v1', 'demoKey': 'petstore-demo-key', 'admin': True,
        'operations': [route.name for route in stub.create_app().routes]}
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


# -- the documents ----------------------------------------------------------------

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


# -- the headers of the page and the documents --------------------------------------------

@pytest.fixture(scope='module')
def server():
    """A fixture server on loopback, admin endpoints on, with --cors."""
    with stub.serve(fixtures=True, cors=True) as server:
        yield server


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
