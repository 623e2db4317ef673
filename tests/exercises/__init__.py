"""Exercises: grow the Pet Store API in Part 1 of ``petstore_stub.py`` until these tests pass.

    .venv/bin/python -m pytest tests/exercises --exercise delete    # or put, or cursor

Each test says what the stub should answer and what it answered instead. The regular suite skips
them. Once yours passes, the other tests should too, but for those of the stub as shipped:

    .venv/bin/python -m pytest -m 'not slow' --ignore tests/test_exercises.py

A reference solution of each is in ``solutions/``, to read once yours works."""

import json

import pytest

REX = {'name': 'Rex', 'categoryId': 1, 'status': 'available'}
MAX = {'name': 'Max', 'categoryId': 2}

HINTS = {
    401: 'the key was refused: send the same Authorization header as the other tests',
    404: 'no pet has that id, or no route matched the path: check the path in create_app()',
    405: 'no route takes this method on this path yet: add one in create_app(), in Part 1',
    500: 'the code raised an exception: its traceback is printed above this message',
}


def check(holds: bool, message: str) -> None:
    """Fail with ``message`` alone, unless it ``holds``."""
    if not holds:
        pytest.fail(message, pytrace=False)


def expect(response, status: int, what: str) -> None:
    """Fail, saying what the stub should have done and what it did, unless ``response`` has
    ``status``."""
    if response.status_int == status:
        return
    got = response.status
    if response.content_type == 'application/json' and response.body:
        body = json.loads(response.body)
        got += f', {json.dumps(body)}' if not isinstance(body, dict) or 'message' not in body else (
            f', with the Error body: {body["message"]}')
    hint = HINTS.get(response.status_int, '')
    check(False, f'{what}\n  it should answer: {status}\n  it answered: {got}'
          + (f'\n  hint: {hint}' if hint else ''))


def operation(client, method: str, path: str) -> dict:
    """The operation that ``GET /v1/openapi.json`` describes at ``path``, or a failure saying
    what data/openapi.json lacks."""
    document = client.get('/v1/openapi.json').json
    described = document['paths'].get(path, {}).get(method)
    check(described is not None, f'data/openapi.json does not describe {method.upper()} {path} '
          f'yet: add an operation "{method}" under "paths", "{path}"')
    return described
