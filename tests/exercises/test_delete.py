"""Exercise 1: DELETE /v1/pets/{petId} removes a pet.

- ``204`` with no body when the pet was there; then ``GET`` finds it no more (``404``).
- ``404`` with the Error body when no pet has that id; ``400`` for an id that is not an int64.
- The key is checked, as on every operation (``401``).
- A removed pet stays removed, and its id is never given to a new pet: not after a clean stop,
  not after ``kill -9``.
- ``data/openapi.json`` describes it, with the operationId ``deletePet``.

Where to start: ``create_app()`` (the routes) and ``PetStore`` (what the store does, each thing
as one ``Change``), both in Part 1 of petstore_stub.py."""

import contextlib
import signal

import pytest

from conftest import AUTH, StubProcess, call, connect
from exercises import HINTS, MAX, REX, check, expect, operation


def test_a_pet_deleted_answers_204_with_no_body_and_is_gone(client):
    client.post_json('/v1/pets', REX)
    deleted = client.delete('/v1/pets/1', expect_errors=True)
    expect(deleted, 204, 'DELETE /v1/pets/1 removes pet 1')
    check(deleted.body == b'', f'a 204 has no body; this one held {deleted.body[:80]!r}')
    expect(client.get('/v1/pets/1', expect_errors=True), 404,
           'after DELETE /v1/pets/1, GET /v1/pets/1 finds no pet')
    check(client.get('/v1/pets').json == [], 'after the DELETE, GET /v1/pets still lists pet 1')


def test_deleting_a_pet_no_one_has_is_a_404_with_the_error_body(client):
    missing = client.delete('/v1/pets/7', expect_errors=True)
    expect(missing, 404, 'DELETE /v1/pets/7, when no pet has id 7')
    check(missing.json['code'] == 'not_found', f'the 404 has the Error body {missing.json}; make '
          "it as getPet does, with ApiError(404, 'not_found', ...)")
    expect(client.delete('/v1/pets/seven', expect_errors=True), 400,
           'DELETE /v1/pets/seven: "seven" is not an int64, as GET /v1/pets/seven says')


def test_a_delete_without_the_key_is_refused_and_one_with_it_is_made(client):
    client.post_json('/v1/pets', REX)
    client.authorization = None
    expect(client.delete('/v1/pets/1', expect_errors=True), 401, 'DELETE /v1/pets/1 without a key')
    expect(client.delete('/v1/pets/1', headers=AUTH, expect_errors=True), 204,
           'DELETE /v1/pets/1 with the key, after one without it was refused')


def test_a_deleted_pet_s_id_is_never_given_again(client):
    client.post_json('/v1/pets', REX)
    client.post_json('/v1/pets', MAX)
    expect(client.delete('/v1/pets/2', expect_errors=True), 204, 'DELETE /v1/pets/2')
    new = client.post_json('/v1/pets', REX).json
    check(new['id'] == 3, f'pet 2 was deleted, so the next pet takes id 3, never 2 again; it '
          f'took {new["id"]}')


@pytest.mark.parametrize('stop', [signal.SIGTERM, signal.SIGKILL], ids=['clean stop', 'kill -9'])
def test_a_deleted_pet_stays_deleted_and_its_id_unused_after_a_restart(tmp_path, stop):
    db = str(tmp_path / 'pets.json')
    server = StubProcess('--db', db, '--quiet')
    with contextlib.closing(connect(server.url)) as connection:
        for pet in (REX, MAX, REX):
            call(connection, 'POST', '/v1/pets', pet)
        statuses = [call(connection, 'DELETE', f'/v1/pets/{pet_id}')[0] for pet_id in (3, 1)]
    check(statuses == [204, 204], f'DELETE /v1/pets/3 and /v1/pets/1 should answer 204; they '
          f'answered {statuses} ({HINTS.get(statuses[0], "see the answers above")})')
    server.stop(stop)
    restarted = StubProcess('--db', db, '--quiet')
    with contextlib.closing(connect(restarted.url)) as connection:
        pets = call(connection, 'GET', '/v1/pets')[1]
        new = call(connection, 'POST', '/v1/pets', MAX)[1]
    restarted.stop(signal.SIGTERM)
    check([pet['id'] for pet in pets] == [2],
          f'after a restart the store should hold pet 2 alone, the others deleted; it lists {pets}')
    check(new['id'] == 4, f'after a restart, a new pet took id {new["id"]}; ids 1 to 3 were given')


def test_the_delete_is_described_in_the_openapi_document(client):
    described = operation(client, 'delete', '/pets/{petId}')
    check(described.get('operationId') == 'deletePet', 'give the operation the operationId '
          '"deletePet", and its route in create_app() the name deletePet')
    missing = {'204', '400', '401', '404'} - set(described.get('responses', {}))
    check(not missing, f'the document does not list the responses {sorted(missing)}')
