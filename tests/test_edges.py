"""The public documents: no key for HEAD as for GET, and nothing logged for the favicon."""

from __future__ import annotations

import pytest
import webtest

import petstore_stub as stub


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
