"""Exercise 2: PUT /v1/pets/{petId} replaces a pet with the NewPet sent.

- ``200`` with the Pet: the id it had, and the fields sent, no others (a field left out is gone).
- ``404`` with the Error body when no pet has that id.
- The body is checked as createPet checks it: ``400`` for a NewPet that is not valid, ``415``
  for a body that is not JSON; the key too (``401``). A refused PUT changes nothing.
- The pet stays replaced after a restart.
- ``data/openapi.json`` describes it, with the operationId ``replacePet``.

Where to start: ``create_pet()`` in ``create_app()``, and ``PetStore``, in Part 1."""

import contextlib
import signal

from conftest import StubProcess, call, connect
from exercises import MAX, REX, check, expect, operation


def test_a_pet_put_in_place_of_another_keeps_its_id_and_only_the_fields_sent(client):
    client.post_json('/v1/pets', REX)
    put = client.put_json('/v1/pets/1', MAX, expect_errors=True)
    expect(put, 200, 'PUT /v1/pets/1 with a NewPet replaces pet 1')
    check(put.json == {'id': 1, **MAX}, f'the 200 should hold the Pet {{"id": 1, ...the NewPet '
          f'sent}}, {dict(id=1, **MAX)}; it held {put.json}')
    got = client.get('/v1/pets/1').json
    check(got == {'id': 1, **MAX}, f'after the PUT, GET /v1/pets/1 should give {dict(id=1, **MAX)}'
          f'; it gave {got} (a field the NewPet leaves out, such as status, is gone)')
    check(client.get('/v1/pets').json == [got], 'GET /v1/pets should list the pet as it is now')


def test_putting_a_pet_no_one_has_is_a_404_that_creates_nothing(client):
    missing = client.put_json('/v1/pets/7', MAX, expect_errors=True)
    expect(missing, 404, 'PUT /v1/pets/7, when no pet has id 7')
    check(missing.json['code'] == 'not_found', f'the 404 has the Error body {missing.json}')
    check(client.get('/v1/pets').json == [], 'a PUT that answered 404 should store no pet')


def test_a_put_is_checked_as_a_create_and_a_refused_one_changes_nothing(client):
    client.post_json('/v1/pets', REX)
    for body, why in [({'name': 'Rex'}, 'it has no categoryId'),
                      ({**MAX, 'colour': 'red'}, 'NewPet has no field colour'),
                      ({**MAX, 'status': 'lost'}, '"lost" is not a status')]:
        expect(client.put_json('/v1/pets/1', body, expect_errors=True), 400,
               f'PUT /v1/pets/1 with {body}: {why}, as POST /v1/pets would say')
    expect(client.put('/v1/pets/1', 'name=Max', expect_errors=True), 415,
           'PUT /v1/pets/1 with a body that is not JSON, as POST /v1/pets would say')
    check(client.get('/v1/pets/1').json == {'id': 1, **REX}, 'a refused PUT changed pet 1')
    client.authorization = None
    expect(client.put_json('/v1/pets/1', MAX, expect_errors=True), 401,
           'PUT /v1/pets/1 without a key')


def test_a_pet_put_in_place_stays_so_after_a_restart(tmp_path):
    db = str(tmp_path / 'pets.json')
    server = StubProcess('--db', db, '--quiet')
    with contextlib.closing(connect(server.url)) as connection:
        call(connection, 'POST', '/v1/pets', REX)
        status, _ = call(connection, 'PUT', '/v1/pets/1', MAX)
    server.stop(signal.SIGKILL)
    check(status == 200, f'PUT /v1/pets/1 should answer 200; it answered {status}')
    restarted = StubProcess('--db', db, '--quiet')
    with contextlib.closing(connect(restarted.url)) as connection:
        pet = call(connection, 'GET', '/v1/pets/1')[1]
    restarted.stop(signal.SIGTERM)
    check(pet == {'id': 1, **MAX},
          f'after a restart, pet 1 should be {dict(id=1, **MAX)}; it is {pet}')


def test_the_put_is_described_in_the_openapi_document(client):
    described = operation(client, 'put', '/pets/{petId}')
    check(described.get('operationId') == 'replacePet', 'give the operation the operationId '
          '"replacePet", and its route in create_app() the name replacePet')
    missing = {'200', '400', '401', '404', '415'} - set(described.get('responses', {}))
    check(not missing, f'the document does not list the responses {sorted(missing)}')
