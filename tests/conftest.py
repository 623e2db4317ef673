import json
from typing import Iterator

import pytest
import webtest

import petstore_stub as stub

KEY = stub.DEMO_API_KEY
AUTH = {'Authorization': f'Bearer {KEY}'}


def make_client(app: stub.StubApp) -> webtest.TestApp:
    client = webtest.TestApp(app)
    client.authorization = ('Bearer', KEY)
    return client


@pytest.fixture
def app() -> stub.StubApp:
    return stub.create_app()


@pytest.fixture
def client(app: stub.StubApp) -> webtest.TestApp:
    """The app in-process, with the demo key preset."""
    return make_client(app)


@pytest.fixture(params=['memory', 'file'])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[stub.PetStore]:
    """Each store test runs over both storages."""
    with stub.PetStore(None if request.param == 'memory' else tmp_path / 'pets.json') as store:
        yield store


def listed(store: stub.PetStore, limit: int = 100, status: str | None = None) -> list[dict]:
    """The pets that listPets would send."""
    return json.loads(store.list_json(limit, status))


def fetched(store: stub.PetStore, pet_id: int) -> dict | None:
    """The pet that getPet would send, or None."""
    text = store.get_json(pet_id)
    return None if text is None else json.loads(text)
