"""The stub on real sockets: keep-alive, concurrency, a slow response at a stop."""

from __future__ import annotations

import logging
import json
import signal
import threading
from urllib.parse import urlsplit

import pytest

import petstore_stub as stub
from conftest import JSON_HEADERS, StubProcess, call, call_once, connect

def test_keep_alive_serves_several_requests_on_one_connection():
    with stub.serve() as server:
        connection = connect(server.url)
        path = urlsplit(server.url).path
        assert call(connection, 'POST', f'{path}/pets', {'name': 'Rex', 'categoryId': 1})[0] == 201
        first_socket = connection.sock
        for _ in range(3):
            assert call(connection, 'GET', f'{path}/pets')[0] == 200
            assert connection.sock is first_socket
        connection.close()


def test_concurrent_creates_get_distinct_ids_that_survive_a_restart(tmp_path):
    db = tmp_path / 'pets.json'
    acknowledged = []

    def client(number: int, url: str) -> None:
        connection = connect(url)
        for count in range(40):
            status, pet = call(connection, 'POST', '/v1/pets', {'name': f'c{number}-{count}',
                                                                'categoryId': number})
            assert status == 201
            acknowledged.append(pet)
        connection.close()

    with stub.serve(db=db) as server:
        threads = [threading.Thread(target=client, args=(n, server.url)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len({pet['id'] for pet in acknowledged}) == 320
    # Stopped cleanly: the TinyDB file alone holds every pet.
    assert [path.name for path in tmp_path.iterdir()] == ['pets.json']
    on_disk = json.loads(db.read_text())['pets']
    assert len(on_disk) == 320
    for pet in acknowledged:
        assert on_disk[str(pet['id'])] == {k: v for k, v in pet.items() if k != 'id'}


@pytest.mark.slow
@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_a_slow_response_in_flight_when_the_stub_stops_is_finished_not_cut(signum):
    server = StubProcess('--db', ':memory:', '--admin', '--fixtures')
    connection = connect(server.url)
    connection.request('POST', '/__admin/faults', json.dumps({'fault': 'slow', 'seconds': 30}),
                       JSON_HEADERS)
    connection.getresponse().read()
    connection.request('GET', '/v1/pets?limit=100', headers=JSON_HEADERS)
    response = connection.getresponse()  # its head and a first piece; the rest drips
    assert server.stop(signum) == 0
    body = response.read()
    connection.close()
    assert len(body) == int(response.getheader('Content-Length'))
    assert len(json.loads(body)) == 13


def test_the_servers_quiet_filters_leave_the_waitress_loggers_as_they_were():
    loggers = [logging.getLogger('waitress'), logging.getLogger('waitress.queue')]
    before = [(logger.level, list(logger.filters)) for logger in loggers]
    with stub.serve() as server:
        assert all(len(logger.filters) == len(filters) + 1
                   for logger, (_, filters) in zip(loggers, before))
        assert call_once(server.url, 'GET', f'{urlsplit(server.url).path}/pets')[0] == 200
    assert [(logger.level, list(logger.filters)) for logger in loggers] == before
