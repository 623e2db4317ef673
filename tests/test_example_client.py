"""Testing a small Pet Store client with the petstore_server fixture."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest


class PetStoreError(Exception):
    """The API answered with its Error body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f'{status} {code}: {message}')
        self.status, self.code = status, code


class PetStoreClient:
    """The code under test: a client a project would write for the Pet Store API."""

    def __init__(self, base_url: str, api_key: str, timeout: float = 5.0) -> None:
        self.base_url, self.api_key, self.timeout = base_url, api_key, timeout

    def add_pet(self, name: str, category_id: int) -> dict:
        return self._call('POST', '/pets', {'name': name, 'categoryId': category_id})

    def available_pets(self, limit: int = 20) -> list:
        return self._call('GET', f'/pets?status=available&limit={limit}')

    def _call(self, method: str, path: str, body: dict | None = None):
        request = urllib.request.Request(
            self.base_url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={'Authorization': f'Bearer {self.api_key}',
                     'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            with error:
                body = json.load(error)
            raise PetStoreError(body['status'], body['code'], body['message']) from None


@pytest.fixture
def client(petstore_server):
    return PetStoreClient(petstore_server.url, petstore_server.api_key)


def test_a_new_pet_is_listed_once_available(client, petstore_server):
    petstore_server.add_pet('Rex', 1, status='available')
    assert client.add_pet('Bella', 2) == {'id': 2, 'name': 'Bella', 'categoryId': 2}
    assert [pet['name'] for pet in client.available_pets()] == ['Rex']


def test_the_client_sends_what_the_api_expects(client, petstore_server):
    client.add_pet('Kiwi', 3)
    (request,) = petstore_server.requests
    assert (request['method'], request['path']) == ('POST', '/v1/pets')
    assert request['body'] == {'name': 'Kiwi', 'categoryId': 3}


def test_the_client_surfaces_a_server_error(client, petstore_server):
    petstore_server.fail_next(503, route='listPets')
    with pytest.raises(PetStoreError) as caught:
        client.available_pets()
    assert (caught.value.status, caught.value.code) == (503, 'service_unavailable')


def test_the_client_reports_a_rejected_pet(client):
    with pytest.raises(PetStoreError) as caught:
        client.add_pet('', 1)
    assert (caught.value.status, caught.value.code) == (400, 'invalid_body')


def test_the_client_gives_up_after_its_timeout(petstore_server):
    petstore_server.delay = 0.5
    impatient = PetStoreClient(petstore_server.url, petstore_server.api_key, timeout=0.1)
    with pytest.raises(TimeoutError):
        impatient.available_pets()
