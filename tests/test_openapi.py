"""The OpenAPI descriptions, the API's and the admin endpoints': valid, public, lint-clean,
and the same as the routes the app serves."""

import json
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import webtest
from openapi_schema_validator import OAS30Validator
from openapi_schema_validator import validate as validate_schema
from openapi_spec_validator import validate

import petstore_stub as stub
from conftest import call_once, make_client


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


def test_servers_name_only_the_absolute_url_the_client_reached(document):
    (server,) = document['servers']
    assert server['url'] in ('http://localhost:80/v1', 'http://localhost:80/staging/v1')


@pytest.mark.parametrize('path', ['/v1/openapi.json', '/__admin/openapi.json'])
def test_servers_are_the_url_each_document_was_reached_by(path):
    client = make_client(stub.create_stub(admin=True))
    reached = {'HTTP_HOST': 'pets.example:8443', 'wsgi.url_scheme': 'https'}
    (server,) = client.get(path, extra_environ=reached).json['servers']
    assert server['url'] == 'https://pets.example:8443' + path.rsplit('/', 1)[0]


def test_openapi_operations_are_exactly_the_served_routes(document):
    app_base = urlsplit(document['servers'][0]['url']).path
    app = stub.create_stub(base_path=app_base)
    served = {(route.method, route.rule): route.name for route in app.api.routes
              if route.rule.startswith(app_base) and route.name != 'openapi'}
    described = {(method.upper(), app_base + re.sub(r'\{petId\}', '<pet_id>', path)):
                 operation['operationId']
                 for path, methods in document['paths'].items()
                 for method, operation in methods.items()}
    assert described == served


def operations(document):
    """Each operation of ``document`` by its operationId (or its method and path, if it has none)."""
    return {operation.get('operationId', f'{method.upper()} {path}'): operation
            for path, methods in document['paths'].items()
            for method, operation in methods.items()}


def test_every_error_status_has_the_error_body(document):
    for name, operation in operations(document).items():
        for status, response in operation.get('responses', {}).items():
            if status.startswith(('4', '5')):
                if '$ref' in response:
                    response = document['components']['responses'][
                        response['$ref'].rsplit('/', 1)[1]]
                schema = response.get('content', {}).get('application/json', {}).get('schema')
                assert schema == {'$ref': '#/components/schemas/Error'}, f'{name} {status}'


def test_every_operation_has_a_default_error_response_tags_and_a_description(document):
    for name, operation in operations(document).items():
        assert operation.get('responses', {}).get('default') == {
            '$ref': '#/components/responses/Error'}, f'{name} has no default Error response'
        for key in ('tags', 'description'):
            assert operation.get(key), f'{name} has no {key}'


def test_get_pet_is_deprecated_with_its_headers(document):
    get_pet = document['paths']['/pets/{petId}']['get']
    assert get_pet['deprecated'] is True
    assert set(get_pet['responses']['200']['headers']) == {'Deprecation', 'Sunset', 'Link'}


def test_limit_is_1_to_100_and_20_by_default(document):
    limit = document['paths']['/pets']['get']['parameters'][0]
    schema = limit['schema']
    assert (schema['minimum'], schema['maximum'], schema['default']) == (1, 100, 20)


def test_the_schemas_and_the_bearer_scheme_are_the_specs(document):
    components = document['components']
    assert set(components['schemas']) == {'Pet', 'NewPet', 'Pets', 'Error', 'PetStatus'}
    assert components['schemas']['PetStatus']['enum'] == list(stub.PET_STATUSES)
    scheme = components['securitySchemes']['bearerAuth']
    assert (scheme['type'], scheme['scheme']) == ('http', 'bearer')
    assert document['security'] == [{'bearerAuth': []}]


@pytest.mark.parametrize('status, body', [
    pytest.param(201, {'name': 'Rex', 'categoryId': 1}, id='201'),
    pytest.param(400, {'name': 'Rex'}, id='400'),
    pytest.param(413, b' ' * (stub.MAX_BODY_BYTES + 1), id='413 under default'),
    pytest.param(415, b'x', id='415'),
])
def test_the_statuses_the_app_returns_are_described(status, body):
    client = make_client(stub.create_stub())
    document = client.get('/v1/openapi.json').json
    if isinstance(body, bytes):
        response = client.post('/v1/pets', body, content_type='text/plain' if body == b'x'
                               else 'application/json', status='*')
    else:
        response = client.post_json('/v1/pets', body, status='*')
    assert response.status_int == status
    responses = document['paths']['/pets']['post']['responses']
    assert str(status) in responses or 'default' in responses


def test_every_answer_with_pets_is_what_the_document_describes(document):
    client = make_client(stub.create_stub())
    answers = [client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1}),
               client.get('/v1/pets/1'), client.get('/v1/pets')]
    for response, schema in zip(answers, ('Pet', 'Pet', 'Pets')):
        validate_schema(response.json, {'$ref': f'#/components/schemas/{schema}',
                                        'components': document['components']}, cls=OAS30Validator)


def test_the_document_agrees_with_the_code_on_every_number_and_date(document):
    text = json.dumps(document)
    for value in (stub.SUNSET, f'@{stub.DEPRECATED_SINCE}', str(stub.MAX_BODY_BYTES),
                  stub.DEMO_API_KEY):
        assert value in text, value
    new_pet = document['components']['schemas']['NewPet']
    assert tuple(new_pet['properties']) == stub.NEW_PET_FIELDS
    assert new_pet['required'] == ['name', 'categoryId']
    assert document['info']['version'] == stub.API_VERSION


# -- the admin endpoints' description ---------------------------------------------

@pytest.fixture
def admin_document():
    client = webtest.TestApp(stub.create_stub(admin=True))
    return client.get('/__admin/openapi.json', status=200).json


def test_the_admin_document_is_valid_openapi_3_and_needs_no_key(admin_document):
    validate(admin_document)
    assert admin_document['servers'] == [{'url': 'http://localhost:80/__admin',
                                           'description': 'this stub'}]


def test_the_admin_document_describes_exactly_the_admin_routes(admin_document):
    app = stub.create_stub(admin=True)
    served = {(route.method, route.rule): route.name for route in app.api.routes
              if route.rule.startswith(stub.ADMIN_PREFIX)}
    described = {(method.upper(), '/__admin' + re.sub(r'\{(\w+)\}', r'<\1>', path)):
                 operation['operationId']
                 for path, methods in admin_document['paths'].items()
                 for method, operation in methods.items()}
    assert described == served


def test_the_admin_document_names_the_fault_kinds_and_operations_the_code_has(admin_document):
    schemas = admin_document['components']['schemas']
    assert schemas['Fault']['properties']['fault']['oneOf'][1]['enum'] == list(stub.FAULT_KINDS)
    operations = [route.name for route in stub.create_app().routes]
    assert schemas['OperationId']['enum'] == [*operations, None]
    assert schemas['JournalOperation']['enum'] == [*operations, 'index', 'openapi', None]
    for schema, name, names in (('CallFilter', 'operation', 'JournalOperation'),
                                ('CallAssertion', 'operation', 'JournalOperation'),
                                ('JournalEntry', 'operation', 'JournalOperation'),
                                ('NewFault', 'route', 'OperationId'), ('Fault', 'route', 'OperationId')):
        assert schemas[schema]['properties'][name] == {'$ref': f'#/components/schemas/{names}'}
    assert set(schemas['CallAssertion']['properties']) == {*schemas['CallFilter']['properties'],
                                                           'times'}
    assert set(schemas['JournalEntry']['required']) == {
        *stub.journal_entry({'REQUEST_METHOD': 'GET'}, stub.Exchange(0), b''), 'sequence',
        'unmatched'}


def test_the_admin_answers_are_what_the_admin_document_describes(admin_document):
    client = make_client(stub.create_stub(admin=True))
    client.post_json('/v1/pets', {'name': 'Rex', 'categoryId': 1})
    client.get('/v1/pets?limit=0', status=400)
    answers = [('get', '/settings', client.get('/__admin/settings'))]
    answers.append(('get', '/faults', client.get('/__admin/faults')))
    answers.append(('post', '/faults', client.post_json('/__admin/faults', {'fault': 'drop'})))
    answers.append(('post', '/delay', client.post_json('/__admin/delay', {
        'seconds': 0.1, 'route': 'getPet'})))
    answers.append(('get', '/settings', client.get('/__admin/settings')))
    answers.append(('get', '/faults', client.get('/__admin/faults')))
    answers.append(('get', '/requests', client.get('/__admin/requests')))
    answers.append(('post', '/requests/find', client.post_json(
        '/__admin/requests/find', {'method': 'GET', 'path': '/pets'})))
    answers.append(('post', '/requests/count', client.post_json(
        '/__admin/requests/count', {'operation': 'createPet'})))
    answers.append(('post', '/requests/assert', client.post_json(
        '/__admin/requests/assert', {'operation': 'createPet', 'json': {'name': 'Kiwi'},
                                     'query': {'x': 1}, 'headers': {'X-Trace': 'a'}},
        status=409)))
    client.get('/v1/nowhere', status=404)
    answers.append(('get', '/requests/unmatched', client.get('/__admin/requests/unmatched')))
    answers.append(('get', '/coverage', client.get('/__admin/coverage')))
    answers.append(('get', '/settings', client.get('/__admin/settings')))
    answers.append(('get', '/health', client.get('/__admin/health')))
    for method, path, response in answers:
        described = admin_document['paths'][path][method]['responses'][str(response.status_int)]
        schema = described['content']['application/json']['schema']
        validate_schema(response.json, {**schema, 'components': admin_document['components']},
                        cls=OAS30Validator)


# -- the linters, as installed by .ci/run ---------------------------------------------

NODE_BIN = Path(__file__).resolve().parent.parent / '.ci' / 'node' / 'node_modules' / '.bin'
#: The one finding allowed: the spec shows no body for listOrders, so it has no 2xx response.
LIST_ORDERS = '#/paths/~1store~1orders/get/responses'


@pytest.fixture(scope='module')
def served_documents(tmp_path_factory):
    folder = tmp_path_factory.mktemp('documents')
    with stub.serve() as server:
        for name, path in (('api', '/v1/openapi.json'), ('admin', '/__admin/openapi.json')):
            document = call_once(server.url, 'GET', path)[1]
            (folder / f'{name}.json').write_text(json.dumps(document, indent=1))
    return folder


def linter(name):
    program = NODE_BIN / name
    if not program.exists():
        pytest.skip(f'{name} is not installed in .ci/node (.ci/run installs it)')
    return str(program)


@pytest.mark.slow
@pytest.mark.parametrize('name', ['api', 'admin'])
def test_redocly_finds_nothing_to_warn_of_but_list_orders(served_documents, name):
    result = subprocess.run([linter('redocly'), 'lint', '--format=json', f'{name}.json'],
                            cwd=served_documents, capture_output=True, text=True, timeout=120)
    problems = json.loads(result.stdout)['problems']
    found = [(problem['ruleId'], problem['location'][0]['pointer']) for problem in problems]
    assert found in ([], [('operation-2xx-response', LIST_ORDERS)] if name == 'api' else []), \
        result.stdout


@pytest.mark.slow
@pytest.mark.parametrize('name', ['api', 'admin'])
def test_spectral_warns_of_list_orders_alone(served_documents, name):
    (served_documents / 'ruleset.json').write_text('{"extends": ["spectral:oas"]}')
    result = subprocess.run([linter('spectral'), 'lint', '--format=json', '--quiet',
                             '--ruleset', 'ruleset.json', f'{name}.json'],
                            cwd=served_documents, capture_output=True, text=True, timeout=120)
    found = [(problem['code'], '.'.join(map(str, problem['path'])))
             for problem in json.loads(result.stdout or '[]')]
    expected = [('operation-success-response', 'paths./store/orders.get.responses')]
    assert found == (expected if name == 'api' else []), result.stdout + result.stderr
