"""Testing against the API in process with the petstore_app fixture: no socket, no thread."""


def test_a_new_pet_can_be_got_at_its_location(petstore_app):
    created = petstore_app.post_json('/v1/pets', {'name': 'Kiwi', 'categoryId': 3}, status=201)
    assert created.headers['Location'] == '/v1/pets/1'
    assert petstore_app.get('/v1/pets/1').json == {'id': 1, 'name': 'Kiwi', 'categoryId': 3}


def test_a_wrong_key_gets_a_401(petstore_app):
    response = petstore_app.get('/v1/pets', headers={'Authorization': 'Bearer wrong'}, status=401)
    assert response.json['code'] == 'invalid_token'


def test_a_queued_fault_answers_in_process_too(petstore_app):
    petstore_app.app.fail_next(503, route='listPets')
    assert petstore_app.get('/v1/pets', status=503).json['code'] == 'service_unavailable'
    petstore_app.app.assert_called('listPets', times=1)
