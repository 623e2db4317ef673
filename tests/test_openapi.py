"""The OpenAPI description: valid, public, and the same as the routes the app serves."""

import json
import re

import pytest
import webtest
from openapi_spec_validator import validate

import petstore_stub as stub
from conftest import make_client


@pytest.fixture(params=[stub.BASE_PATH, stub.STAGING_BASE_PATH])
def document(request):
    client = make_client(stub.create_stub(base_path=request.param))
    response = client.get(f'{request.param}/openapi.json', headers={'Authorization': ''})
    assert response.status_int == 200
    return response.json


def test_openapi_json_is_valid_openapi_3(document):
    validate(document)
    assert document['openapi'].startswith('3.')
    assert document['info']['version'] == '1.0.0'


def test_openapi_json_needs_no_key():
    assert webtest.TestApp(stub.create_stub()).get('/v1/openapi.json', status=200).json['paths']


def test_servers_list_this_stub_first_and_the_other_base_path(document):
    urls = [server['url'] for server in document['servers']]
    assert sorted(urls) == ['/staging/v1', '/v1']


def test_openapi_operations_are_exactly_the_served_routes(document):
    app_base = document['servers'][0]['url']
    app = stub.create_stub(base_path=app_base)
    served = {(route.method, route.rule): route.name for route in app.api.routes
              if route.rule.startswith(app_base) and route.name != 'openapi'}
    described = {(method.upper(), app_base + re.sub(r'\{petId\}', '<pet_id>', path)):
                 operation['operationId']
                 for path, methods in document['paths'].items()
                 for method, operation in methods.items()}
    assert described == served


def test_every_error_status_has_the_error_body(document):
    for methods in document['paths'].values():
        for operation in methods.values():
            for status, response in operation['responses'].items():
                if status.startswith(('4', '5')):
                    if '$ref' in response:
                        response = document['components']['responses'][
                            response['$ref'].rsplit('/', 1)[1]]
                    schema = response['content']['application/json']['schema']
                    assert schema == {'$ref': '#/components/schemas/Error'}, status


def test_get_pet_is_deprecated_with_its_headers(document):
    get_pet = document['paths']['/pets/{petId}']['get']
    assert get_pet['deprecated'] is True
    assert set(get_pet['responses']['200']['headers']) == {'Deprecation', 'Sunset', 'Link'}


def test_limit_bounds_and_default(document):
    limit = document['paths']['/pets']['get']['parameters'][0]
    schema = limit['schema']
    assert (schema['minimum'], schema['maximum'], schema['default']) == (1, 100, 20)


def test_the_schemas_and_the_bearer_scheme(document):
    components = document['components']
    assert set(components['schemas']) == {'Pet', 'NewPet', 'Pets', 'Error', 'PetStatus'}
    assert components['schemas']['PetStatus']['enum'] == ['available', 'pending', 'sold']
    scheme = components['securitySchemes']['bearerAuth']
    assert (scheme['type'], scheme['scheme']) == ('http', 'bearer')
    assert document['security'] == [{'bearerAuth': []}]


@pytest.mark.parametrize('status, body', [
    (201, {'name': 'Rex', 'categoryId': 1}),
    (400, {'name': 'Rex'}),
    (415, None),
])
def test_the_statuses_the_app_returns_are_described(status, body):
    client = make_client(stub.create_stub())
    document = client.get('/v1/openapi.json').json
    if body is None:
        response = client.post('/v1/pets', 'x', content_type='text/plain', status='*')
    else:
        response = client.post_json('/v1/pets', body, status='*')
    assert response.status_int == status
    assert str(status) in document['paths']['/pets']['post']['responses']


def test_the_document_agrees_with_the_code_on_every_number_and_date(document):
    text = json.dumps(document)
    for value in (stub.SUNSET, f'@{stub.DEPRECATED_SINCE}', str(stub.MAX_BODY_BYTES),
                  stub.DEMO_API_KEY):
        assert value in text, value
    new_pet = document['components']['schemas']['NewPet']
    assert tuple(new_pet['properties']) == stub.NEW_PET_FIELDS
    assert new_pet['required'] == ['name', 'categoryId']
    assert document['info']['version'] == stub.API_VERSION
