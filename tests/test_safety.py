"""Safe in a browser: what the page at / and the documents tell the browser to run and where to
frame them."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

import petstore_stub as stub
from conftest import send


@pytest.fixture(scope='module')
def server():
    """A fixture server on loopback, admin endpoints on, with --cors."""
    with stub.serve(fixtures=True, cors=True) as server:
        yield server


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
