"""Testing a small Pet Store client with the petstore_server fixture."""

import pytest
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry


class PetStoreClient:
    """The code under test: it retries a 503 after the Retry-After the server asks for."""

    def __init__(self, base_url: str, api_key: str, timeout: float = 5.0) -> None:
        self.base_url, self.timeout = base_url, timeout
        self.session = requests.Session()
        self.session.headers['Authorization'] = f'Bearer {api_key}'
        retry = Retry(total=2, read=False, status_forcelist=[503], allowed_methods=None)
        self.session.mount('http://', HTTPAdapter(max_retries=retry))

    def add_pet(self, name: str, category_id: int) -> dict:
        response = self.session.post(f'{self.base_url}/pets', timeout=self.timeout,
                                     json={'name': name, 'categoryId': category_id})
        response.raise_for_status()
        return response.json()


@pytest.fixture
def client(petstore_server):
    return PetStoreClient(petstore_server.url, petstore_server.api_key)


def test_the_client_sends_what_the_api_expects(client, petstore_server):
    assert client.add_pet('Kiwi', 3) == {'id': 1, 'name': 'Kiwi', 'categoryId': 3}
    petstore_server.assert_called('createPet', json={'name': 'Kiwi', 'categoryId': 3}, times=1)


def test_the_client_retries_a_503_once_the_server_allows(client, petstore_server):
    petstore_server.fail_next(503, retry_after=1, route='createPet')
    assert client.add_pet('Kiwi', 3)['id'] == 1
    first, second = petstore_server.requests
    assert (first['status'], second['status']) == (503, 201)
    assert second['time'] - first['time'] >= 1  # it waited out the Retry-After


@pytest.mark.petstore_allows_bad_requests  # it sends an empty name on purpose
def test_the_client_surfaces_a_rejected_pet(client):
    with pytest.raises(requests.HTTPError) as caught:
        client.add_pet('', 1)
    assert caught.value.response.json()['code'] == 'invalid_body'


def test_the_client_gives_up_after_its_timeout(petstore_server):
    petstore_server.fail_next('hang')
    impatient = PetStoreClient(petstore_server.url, petstore_server.api_key, timeout=0.1)
    with pytest.raises(requests.Timeout):
        impatient.add_pet('Kiwi', 3)
