"""The stub on real sockets: keep-alive, concurrency, signals, refusing a bad file."""

from __future__ import annotations

import importlib.metadata
import logging
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import petstore_stub as stub
from conftest import JSON_HEADERS, MODULE, StubProcess, call, call_once, connect

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


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_stop_with_status_0(tmp_path, signum):
    server = StubProcess('--db', str(tmp_path / 'pets.json'))
    assert call_once(server.url, 'GET', '/v1/pets') == (200, [])
    assert server.stop(signum) == 0
    assert os.listdir(tmp_path) == ['pets.json']  # its log folded in and removed


@pytest.mark.slow  # a 300,000-pet file, written anew at the stop
def test_a_second_sigterm_while_the_stub_folds_its_log_is_ignored(tmp_path):
    db = tmp_path / 'pets.json'
    db.write_text(json.dumps({'pets': {str(n): {'name': f'p{n}', 'categoryId': 1}
                                       for n in range(1, 300_001)}}))
    server = StubProcess('--db', str(db), '--quiet')
    assert call_once(server.url, 'POST', '/v1/pets', {'name': 'Rex', 'categoryId': 1})[0] == 201
    server.process.send_signal(signal.SIGTERM)
    assert server.process.stdout.readline().startswith('petstore-stub stopped: 300001 pets')
    server.process.send_signal(signal.SIGTERM)  # while it folds the log into the file
    assert server.process.wait(timeout=60) == 0
    assert server.process.stderr.read() == ''
    assert os.listdir(tmp_path) == ['pets.json']
    with stub.StubStore(db) as restarted:
        assert len(restarted) == 300_001


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


def test_the_access_log_prints_a_line_per_request():
    # The command line sends these lines to stdout (test_cli); here, one from a real socket.
    lines = []
    with stub.StubServer(stub.create_stub(access_log=lines.append)) as server:
        call_once(server.url, 'GET', '/v1/pets?limit=3')
    (line,) = lines
    assert re.fullmatch(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d 127\.0\.0\.1 GET /v1/pets\?limit=3 200 \d+\.\dms',
                        line)


@pytest.mark.slow  # a process; test_cli's corrupt-database test is the fast one
def test_a_corrupt_file_stops_the_stub_before_it_listens(tmp_path):
    db = tmp_path / 'pets.json'
    db.write_bytes(b'{"pets": {"1": {"name": "Rex", "categ')
    result = subprocess.run([sys.executable, str(MODULE), '--db', str(db), '--port', '0'],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert str(db) in result.stderr
    assert 'not a readable JSON file' in result.stderr
    assert result.stdout == ''
    assert db.read_bytes() == b'{"pets": {"1": {"name": "Rex", "categ'


@pytest.mark.parametrize('command', [
    pytest.param([sys.executable, '-m', 'petstore_stub'], id='python -m petstore_stub'),
    pytest.param([sys.executable, str(MODULE)], id='python petstore_stub.py'),
    pytest.param([str(Path(sys.executable).with_name('petstore-stub'))], id='petstore-stub'),
])
def test_every_way_to_run_it_shows_the_version(command):
    result = subprocess.run([*command, '--version'], capture_output=True, text=True, timeout=30)
    assert result.stdout == f'petstore-stub {stub.__version__}\n'


def test_the_package_takes_its_version_from_the_module():
    assert importlib.metadata.version('petstore-stub') == stub.__version__
    assert 'dynamic = ["version"]' in (MODULE.parent / 'pyproject.toml').read_text()


@pytest.mark.slow  # a process; test_cli's fixtures-once test is the fast one
def test_the_default_database_is_petstore_json_in_the_working_directory(tmp_path):
    server = StubProcess('--fixtures', '--quiet', cwd=tmp_path)
    status, pets = call_once(server.url, 'GET', '/v1/pets?limit=100')
    server.stop(signal.SIGTERM)
    assert status == 200 and len(pets) == 13
    assert len(json.loads((tmp_path / 'petstore.json').read_text())['pets']) == 13
    assert os.listdir(tmp_path) == ['petstore.json']


def test_the_servers_quiet_filters_leave_the_waitress_loggers_as_they_were():
    loggers = [logging.getLogger('waitress'), logging.getLogger('waitress.queue')]
    before = [(logger.level, list(logger.filters)) for logger in loggers]
    with stub.serve() as server:
        assert all(len(logger.filters) == len(filters) + 1
                   for logger, (_, filters) in zip(loggers, before))
        assert call_once(server.url, 'GET', f'{urlsplit(server.url).path}/pets')[0] == 200
    assert [(logger.level, list(logger.filters)) for logger in loggers] == before
