"""Testing a small Pet Store client with the petstore_server fixture."""

from __future__ import annotations

import pytest
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry


class PetStoreError(Exception):
    """The API answered with its Error body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f'{status} {code}: {message}')
        self.status, self.code = status, code


class PetStoreClient:
    """The code under test: a client a project would write for the Pet Store API.

    It retries a 429 or a 503 twice, after the Retry-After the server asks for; a request
    whose answer was lost is not sent again, as the server may have done it.
    """

    def __init__(self, base_url: str, api_key: str, timeout: float = 5.0) -> None:
        self.base_url, self.timeout = base_url, timeout
        self.session = requests.Session()
        self.session.headers['Authorization'] = f'Bearer {api_key}'
        retry = Retry(total=2, read=False, status_forcelist=[429, 503], allowed_methods=None,
                      respect_retry_after_header=True, raise_on_status=False)
        self.session.mount('http://', HTTPAdapter(max_retries=retry))

    def add_pet(self, name: str, category_id: int) -> dict:
        return self._call('POST', '/pets', {'name': name, 'categoryId': category_id})

    def available_pets(self, limit: int = 20) -> list:
        return self._call('GET', '/pets', params={'status': 'available', 'limit': limit})

    def _call(self, method: str, path: str, body: dict | None = None, params=None):
        response = self.session.request(method, self.base_url + path, json=body, params=params,
                                        timeout=self.timeout)
        if response.status_code >= 400:
            error = response.json()
            raise PetStoreError(error['status'], error['code'], error['message'])
        return response.json()


@pytest.fixture
def client(petstore_server):
    return PetStoreClient(petstore_server.url, petstore_server.api_key)


def test_a_new_pet_is_listed_once_available(client, petstore_server):
    petstore_server.add_pet('Rex', 1, status='available')
    assert client.add_pet('Bella', 2) == {'id': 2, 'name': 'Bella', 'categoryId': 2}
    assert [pet['name'] for pet in client.available_pets()] == ['Rex']


def test_the_client_sends_what_the_api_expects(client, petstore_server):
    client.add_pet('Kiwi', 3)
    petstore_server.assert_called('createPet', json={'name': 'Kiwi', 'categoryId': 3}, times=1)
    petstore_server.assert_not_called('getPet')


def test_the_client_retries_a_503_once_the_server_allows(client, petstore_server):
    petstore_server.fail_next(503, retry_after=1, route='createPet')
    assert client.add_pet('Kiwi', 3)['id'] == 1
    first, second = petstore_server.requests
    assert (first['status'], second['status']) == (503, 201)
    assert second['time'] - first['time'] >= 1  # it waited out the Retry-After


def test_the_client_surfaces_a_server_error(client, petstore_server):
    petstore_server.fail_next(500, route='listPets')
    with pytest.raises(PetStoreError) as caught:
        client.available_pets()
    assert (caught.value.status, caught.value.code) == (500, 'internal_error')


@pytest.mark.petstore_allows_bad_requests  # it sends an empty name on purpose
def test_the_client_reports_a_rejected_pet(client):
    with pytest.raises(PetStoreError) as caught:
        client.add_pet('', 1)
    assert (caught.value.status, caught.value.code) == (400, 'invalid_body')


def test_the_client_gives_up_after_its_timeout(petstore_server):
    petstore_server.fail_next('hang')
    impatient = PetStoreClient(petstore_server.url, petstore_server.api_key, timeout=0.1)
    with pytest.raises(requests.Timeout):
        impatient.available_pets()
