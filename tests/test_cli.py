"""The command line: flags, banner, ready file, exit statuses, signals, a stdout or stderr closed or
stalled; through ``main([...])``, one in-process request in place of serving, or as a process."""

import contextlib
import gc
import http.client
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import webtest

import petstore_stub as stub
from conftest import (
    AUTH,
    MODULE,
    PREFLIGHT,
    SERVED,
    NotBound,
    NotBoundServingOnce,
    NotServing,
    ServingOnce,
    StubProcess,
    call_once,
    gone_pid,
    listed,
    make_client,
    never_met,
    port_of,
    raw_post,
    recording,
    send,
    wait_until,
)


def main(argv: list[str], server_class: type[stub.StubServer] = ServingOnce) -> int:
    """The command line, its server making one in-process request instead of serving, unless
    told to do otherwise."""
    return stub.main(argv, server_class)


@pytest.fixture(autouse=True)
def a_fresh_start(monkeypatch, tmp_path):
    """Nothing served yet; no PORT or PETSTORE_API_KEYS from outside; a folder of its own."""
    SERVED.clear()
    monkeypatch.delenv('PORT', raising=False)
    monkeypatch.delenv('PETSTORE_API_KEYS', raising=False)
    monkeypatch.chdir(tmp_path)


def banner_url(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith('serving ')).split()[1]


def test_defaults_serve_loopback_8080_with_the_demo_key_and_petstore_json(capsys, tmp_path):
    assert main([], server_class=NotBoundServingOnce) == 0  # 8080 may be taken here
    assert (SERVED[0].host, SERVED[0].port) == ('127.0.0.1', 8080)
    out = capsys.readouterr().out
    assert f'0 pets in {stub.DEFAULT_DB}' in out
    assert ("serving http://127.0.0.1:8080/v1  try: curl -H 'Authorization: Bearer "
            "petstore-demo-key' http://127.0.0.1:8080/v1/pets") in out
    assert (tmp_path / 'petstore.json').exists()


def test_port_0_picks_a_free_port(capsys):
    assert main(['--port', '0']) == 0
    assert banner_url(capsys.readouterr().out) == f'http://127.0.0.1:{SERVED[0].port}/v1'
    assert SERVED[0].port != 0


def test_the_port_environment_variable_is_honoured(capsys, monkeypatch):
    monkeypatch.setenv('PORT', '0')
    assert main([]) == 0
    assert SERVED[0].port not in (0, 8080)
    assert ':8080' not in capsys.readouterr().out


def test_the_port_flag_beats_the_environment(monkeypatch):
    monkeypatch.setenv('PORT', 'not-a-port')
    assert main(['--port', '0']) == 0


def test_a_bad_port_environment_variable_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setenv('PORT', 'eighty')
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2
    assert ("argument --port: a port (--port, or $PORT) is a number from 0 to 65535; got 'eighty'"
            in capsys.readouterr().err)


def test_the_access_log_shows_each_request(capsys):
    main(['--port', '0', '--db', ':memory:'])
    assert 'GET /v1/pets?limit=100 200' in capsys.readouterr().out


def test_quiet_prints_the_banner_but_no_access_log(capsys):
    main(['--port', '0', '--db', ':memory:', '--quiet'])
    out = capsys.readouterr().out
    assert 'serving ' in out
    assert 'GET /v1/pets' not in out


def test_memory_database_writes_no_file(capsys, tmp_path):
    assert main(['--port', '0', '--db', ':memory:', '--fixtures']) == 0
    assert '13 pets in memory' in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_fixtures_load_the_demo_animals_once(capsys, tmp_path):
    assert main(['--port', '0', '--fixtures']) == 0
    assert '13 pets in petstore.json, 13 loaded from fixtures' in capsys.readouterr().out
    assert main(['--port', '0', '--fixtures']) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert first_line.endswith('13 pets in petstore.json; --fixtures skipped: the store is not '
                               'empty (--db :memory: starts afresh)')
    pets = json.loads((tmp_path / 'petstore.json').read_text())['pets']
    assert len(pets) == 13
    assert os.listdir(tmp_path) == ['petstore.json']  # the log folded in and removed at the stop


def test_demo_animals_cover_every_status_several_categories_and_one_without_status():
    animals = json.loads(stub.data_path("pets.json").read_text(encoding='utf-8'))
    assert len(animals) >= 12
    assert {pet.get('status') for pet in animals} == {'available', 'pending', 'sold', None}
    assert len({pet['categoryId'] for pet in animals}) >= 3
    assert all(stub.parse_new_pet(pet) == pet for pet in animals)


def test_fixtures_from_a_file_are_loaded_and_counted_in_the_banner(capsys, tmp_path):
    path = tmp_path / 'mine.json'
    path.write_text(json.dumps([{'name': 'Solo', 'categoryId': 9}]))
    assert main(['--port', '0', '--db', ':memory:', '--fixtures', str(path)]) == 0
    assert '1 pet in memory, 1 loaded from fixtures' in capsys.readouterr().out


@pytest.mark.parametrize('content, problem', [
    pytest.param('{"name": "Solo"}', 'a JSON array', id='not an array'),
    pytest.param('[{"name": "Solo"}]', 'animal 1 is not a NewPet: categoryId is required',
                 id='missing field'),
    pytest.param('[{"name": "Solo", "categoryId": 1}, "Duo"]',
                 'animal 2 is not a NewPet: a NewPet is a JSON object, not "Duo"',
                 id='animal not an object'),
    pytest.param('[{"name": "Solo", "categoryId": 1, "id": 3}]', "unknown field 'id'", id='an id'),
    pytest.param('[', 'cannot read the fixtures', id='bad JSON'),
    pytest.param('[{"name": "Solo", "name": "Duo", "categoryId": 1}]', "the key 'name' appears twice",
                 id='a key twice'),
    pytest.param(None, 'cannot read the fixtures', id='a missing file'),
])
def test_bad_fixtures_stop_the_stub_with_status_1(capsys, tmp_path, content, problem):
    path = tmp_path / 'bad.json'
    if content is not None:
        path.write_text(content)
    assert main(['--port', '0', '--fixtures', str(path)]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and problem in err
    assert SERVED == []
    assert not (tmp_path / 'petstore.json').exists()  # no database made for nothing


def test_a_corrupt_database_stops_the_stub_with_status_1(capsys, tmp_path):
    path = tmp_path / 'petstore.json'
    path.write_text('{"pets": ')
    assert main(['--port', '0']) == 1
    out, err = capsys.readouterr()
    assert f'petstore-stub: {path.name}: not a readable JSON file' in err
    assert out == ''  # stopped before the banner, so before it listens
    assert path.read_text() == '{"pets": '
    assert SERVED == []


def test_staging_serves_under_staging_v1(capsys):
    assert main(['--port', '0', '--db', ':memory:', '--staging']) == 0
    assert banner_url(capsys.readouterr().out).endswith('/staging/v1')
    assert SERVED[0].app.base_path == '/staging/v1'


def test_given_keys_replace_the_demo_key(capsys, monkeypatch):
    monkeypatch.setenv('PETSTORE_API_KEYS', 'from-env-1, from-env-2')
    assert main(['--port', '0', '--db', ':memory:', '--api-key', 's3cret']) == 0
    assert SERVED[0].app.api_keys == ('s3cret', 'from-env-1', 'from-env-2')
    assert "Bearer s3cret'" in capsys.readouterr().out


def test_a_network_host_without_a_key_gets_a_generated_one(capsys):
    assert main(['--host', '0.0.0.0', '--port', '0', '--db', ':memory:']) == 0
    out = capsys.readouterr().out
    (key,) = SERVED[0].app.api_keys
    assert key != stub.DEMO_API_KEY and len(key) >= 32
    assert f'generated API key (not published anywhere): {key}' in out
    assert f"Bearer {key}' http://127.0.0.1:" in out


def test_the_demo_key_is_refused_on_a_network_host(capsys):
    with pytest.raises(SystemExit) as exited:
        main(['--host', '0.0.0.0', '--api-key', stub.DEMO_API_KEY])
    assert exited.value.code == 2
    assert 'the demo key is published' in capsys.readouterr().err


def test_a_key_that_is_not_a_bearer_token_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(['--api-key', 'has space'])
    assert 'not a valid bearer token' in capsys.readouterr().err


def test_on_loopback_only_loopback_names_are_answered_unless_allowed():
    assert main(['--port', '0', '--db', ':memory:']) == 0
    assert main(['--port', '0', '--db', ':memory:', '--allow-host', 'pets.local',
                 '--allow-host', 'PET_STORE', '--allow-host', '::1']) == 0
    assert [server.app.allowed_hosts for server in SERVED] == [
        frozenset(), frozenset({'pets.local', 'pet_store', '[::1]'})]


@pytest.mark.parametrize('host, checked', [
    pytest.param('127.0.0.1', True, id='127.0.0.1'),
    pytest.param('127.0.0.2', True, id='another address of 127/8'),
    pytest.param('localhost', True, id='localhost'),
    pytest.param('::1', True, id='::1'),
    pytest.param('0.0.0.0', False, id='every interface'),
    pytest.param('::', False, id='every IPv6 interface'),
    pytest.param('192.168.1.5', False, id='a LAN address'),
])
def test_the_host_check_is_on_only_on_loopback(host, checked):
    assert stub.main(['--host', host, '--port', '0', '--db', ':memory:'],
                     server_class=NotBound) == 0  # not all are ours
    apps = [server.app for server in SERVED]
    assert (apps[0].allowed_hosts is not None) is checked


def test_the_cli_admin_flag_enables_the_endpoints(capsys):
    stub.main(['--admin', '--port', '0', '--db', ':memory:'], server_class=NotServing)
    stub.main(['--port', '0', '--db', ':memory:'], server_class=NotServing)
    apps = [server.app for server in SERVED]
    with_admin, without = (make_client(app) for app in apps)
    with_admin.post('/__admin/reset', status=204)
    without.post('/__admin/reset', status=404)


def test_the_cors_flag_lets_any_origin_read_the_api():
    stub.main(['--cors', '--port', '0', '--db', ':memory:', '--quiet'], server_class=NotServing)
    apps = [server.app for server in SERVED]
    response = webtest.TestApp(apps[0]).options('/v1/pets', headers=PREFLIGHT, status=204)
    assert response.headers['Access-Control-Allow-Origin'] == '*'


@pytest.mark.parametrize('argv, message', [
    pytest.param(['--allow-host', 'pets.local:8080'], 'without a port', id='a port'),
    pytest.param(['--allow-host', ''], 'an allowed host is a host name', id='empty'),
    pytest.param(['--allow-host', '*'], 'an allowed host is a host name', id='a wildcard'),
    pytest.param(['--allow-host', 'http://pets.local'], 'an allowed host is a host name',
                 id='a URL'),
    pytest.param(['--allow-host', 'pets.local', '--host', '0.0.0.0'],
                 '--allow-host goes with a loopback --host', id='on every interface'),
])
def test_an_allowed_host_out_of_place_is_a_usage_error(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(['--db', ':memory:', *argv])
    assert exited.value.code == 2
    usage, *_, last = capsys.readouterr().err.strip().splitlines()
    assert usage.startswith('usage: ') and last.startswith('petstore-stub: error: ')
    assert message in last  # one line says what is wrong
    assert SERVED == []


def test_a_busy_port_is_a_clear_error(capsys):
    with stub.serve() as running:
        assert main(['--port', str(running.port), '--db', ':memory:']) == 1
    gc.collect()  # a socket left open would warn here, and the warning fail the test
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f'petstore-stub: cannot listen on 127.0.0.1:{running.port}: Address already '
                    'in use; choose another port (--port or $PORT), or 0 for any free one')


def test_help_lists_every_flag_with_examples(capsys):
    with pytest.raises(SystemExit) as exited:
        main(['--help'])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for flag in ('--host', '--port', '--api-key', '--db', '--fixtures', '--staging', '--quiet'):
        assert flag in out
    assert 'examples:' in out and 'petstore-stub --fixtures' in out


# -- refused in one line -------------------------------------------------------------

@pytest.mark.parametrize('argv, environment, problem', [
    pytest.param(['--port', '70000'], {}, "is a number from 0 to 65535; got '70000'",
                 id='--port 70000'),
    pytest.param(['--port', '65536'], {}, "got '65536'", id='--port 65536'),
    pytest.param(['--port', '-1'], {}, "got '-1'", id='--port -1'),
    pytest.param(['--port', 'http'], {}, "got 'http'", id='--port http'),
    pytest.param([], {'PORT': '70000'}, "a port (--port, or $PORT) is a number from 0 to 65535; "
                 "got '70000'", id='PORT=70000'),
    pytest.param(['--host', ''], {}, 'give an address', id="--host ''"),
    pytest.param(['--host', '999.1.1.1'], {}, "--host '999.1.1.1'", id='--host 999.1.1.1'),
    pytest.param(['--host', 'no-such-host.invalid'], {}, "--host 'no-such-host.invalid'",
                 id='--host no-such-host.invalid'),
    pytest.param(['--first-id', '0'], {}, "a first id is a whole number from 1 to "
                 "9223372036854775807; got '0'", id='--first-id 0'),
    pytest.param(['--first-id', str(2 ** 63)], {}, f"got '{2 ** 63}'", id='--first-id 2**63'),
    pytest.param(['--first-id', '1e16'], {}, "got '1e16'", id='--first-id 1e16'),
    pytest.param(['--delay', '61'], {}, 'a delay is SECONDS, from 0 to 60, after ROUTE= (one of '
                 'listPets, createPet, getPet', id='--delay 61'),
    pytest.param(['--delay', 'lognormal:0.1:0.5'], {}, "got 'lognormal:0.1:0.5'",
                 id='--delay lognormal:0.1:0.5'),
    pytest.param(['--delay', '=0.1'], {}, "if for its calls alone; got '=0.1'", id='--delay =0.1'),
    pytest.param(['--delay', 'noSuchOperation=0.1'], {}, "got 'noSuchOperation=0.1'",
                 id='--delay noSuchOperation=0.1'),
    pytest.param(['--delay', '-0.5'], {}, "got '-0.5'", id='--delay -0.5'),
    pytest.param(['--delay', 'nan'], {}, "got 'nan'", id='--delay nan'),
    pytest.param(['--delay', '1s'], {}, "got '1s'", id='--delay 1s'),
    pytest.param(['--delay', '1_0'], {}, "got '1_0'", id='--delay 1_0'),
    pytest.param(['--delay', '1e1'], {}, "got '1e1'", id='--delay 1e1'),
    pytest.param(['--db', 'pets.json', '--ready-file', 'pets.json'], {},
                 '--ready-file pets.json names the database or its log', id='--ready-file the db'),
    pytest.param(['--ready-file', 'petstore.json.log'], {}, 'names the database or its log',
                 id='--ready-file the log'),
    pytest.param(['--ready-file', 'no/such/ready.json'], {}, 'the ready file goes in a folder '
                 "that exists, and is no folder itself; got 'no/such/ready.json'",
                 id='--ready-file in a missing folder'),
    pytest.param(['--ready-file', '.'], {}, "got '.'", id='--ready-file a folder'),
    pytest.param(['--tls-ca-file', 'no/such/ca.pem'], {}, "the CA file goes in a folder that "
                 "exists, and is no folder itself; got 'no/such/ca.pem'",
                 id='--tls-ca-file in a missing folder'),
    pytest.param(['--db', 'pets.json', '--tls-ca-file', 'pets.json'], {},
                 '--tls-ca-file pets.json names the database or its log',
                 id='--tls-ca-file the db'),
    pytest.param(['--tls-ca-file', 'petstore.json.log'], {}, 'names the database or its log',
                 id='--tls-ca-file the log'),
    pytest.param(['--tls-ca-file', 's.json', '--ready-file', './s.json'], {},
                 '--ready-file and --tls-ca-file name one file', id='--tls-ca-file the ready file'),
    pytest.param(['--tls', '--allow-host', 'pet_store'], {}, "a certificate cannot name every "
                 "name the stub answers to (Codepoint U+005F at position 4 of 'pet_store' not "
                 "allowed)",
                 id='--tls, --allow-host with _'),
    pytest.param(['--ready-file', stub.__file__], {}, "petstore_stub.py holds something other than "
                 "a stopped stub's file, which it would overwrite, then", id='--ready-file a file'),
    pytest.param(['--tls', '--tls-ca-file', stub.__file__], {}, 'petstore_stub.py holds something '
                 'other than', id='--tls-ca-file a file'),
    pytest.param(['--send-timeout', '0'], {}, "a send timeout is a decimal such as 2.5, more than "
                 "0 and at most 3600; got '0'", id='--send-timeout 0'),
    pytest.param(['--send-timeout', '1e-3'], {}, "a send timeout is a decimal such as 2.5, more "
                 "than 0 and at most 3600; got '1e-3'", id='--send-timeout 1e-3'),
    pytest.param(['--tls-key', stub.__file__], {}, '--tls-key goes with --tls-cert',
                 id='--tls-key alone'),
    pytest.param(['--tls-cert', 'no-such.pem'], {}, "give a file that exists; got 'no-such.pem'",
                 id='--tls-cert missing'),
    pytest.param(['--tls-cert', stub.__file__], {}, 'petstore_stub.py (PEM lib); give a PEM '
                 'certificate, and its key unless its file holds it', id='--tls-cert no PEM'),
    pytest.param(['--tls-cert', stub.__file__, '--tls-ca-file', 'ca.pem'], {},
                 'argument --tls-ca-file: not allowed with argument --tls-cert',
                 id='--tls-ca-file with --tls-cert'),
])
def test_a_bad_flag_is_refused_with_status_2_and_no_traceback(capsys, monkeypatch, argv,
                                                              environment, problem):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert problem in err
    assert 'Traceback' not in err
    assert SERVED == []


def test_delays_per_route_are_set_and_the_banner_names_those_set_the_last_flag_winning(capsys):
    assert main(['--port', '0', '--db', ':memory:', '--delay', 'createPet=0.1', '--delay', '5',
                 '--delay', 'getPet=1', '--delay', '0.01', '--delay', 'getPet=0'],
                server_class=NotServing) == 0
    assert SERVED[0].app.settings()['delays'] == [{'seconds': 0.1, 'route': 'createPet'},
                                                  {'seconds': 0.01, 'route': None}]
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith('delay:')]
    assert lines == ['delay: each createPet call waits 0.1 s once its key is accepted',
                     'delay: each API call waits 0.01 s once its key is accepted']


def test_first_id_gives_new_pets_ids_from_it():
    assert main(['--port', '0', '--db', ':memory:', '--first-id', str(2 ** 53 + 1)],
                server_class=NotServing) == 0
    assert SERVED[0].app.add_pet('Rex', 1)['id'] == 2 ** 53 + 1


def test_delay_holds_every_api_request_and_the_banner_says_so(capsys):
    assert main(['--port', '0', '--db', ':memory:', '--delay', '0.25'],
                server_class=NotServing) == 0
    assert SERVED[0].app.delay == 0.25
    assert 'delay: each API call waits 0.25 s once its key is accepted' in capsys.readouterr().out


@pytest.mark.parametrize('flags, admin_url', [
    pytest.param(['--admin'], True, id='with --admin'), pytest.param([], False, id='without')])
def test_the_ready_file_names_the_urls_while_serving_and_goes_at_a_clean_stop(
        capsys, tmp_path, flags, admin_url):
    ready = tmp_path / 'ready.json'
    while_serving = recording(lambda server: json.loads(ready.read_text()))
    assert main(['--port', '0', '--db', ':memory:', '--ready-file', str(ready), *flags],
                server_class=while_serving) == 0
    url = banner_url(capsys.readouterr().out)
    origin = url.removesuffix('/v1')
    assert SERVED == [{'written_by': f'petstore-stub pid {os.getpid()}', 'url': url,
                       'pid': os.getpid(),
                       **({'admin_url': f'{origin}/__admin'} if admin_url else {})}]
    assert list(tmp_path.iterdir()) == []  # the file is gone, and no temporary one is left


def test_the_ready_file_may_not_be_the_database_through_a_link(capsys, tmp_path):
    database = tmp_path / 'pets.json'
    database.write_text('{"pets": {}}')
    (tmp_path / 'hard.json').hardlink_to(database)
    (tmp_path / 'soft.json.log').symlink_to(tmp_path / 'pets.json.log')
    for ready in ('hard.json', 'soft.json.log'):
        with pytest.raises(SystemExit):
            main(['--db', str(database), '--ready-file', str(tmp_path / ready)])
        assert 'names the database or its log' in capsys.readouterr().err
    assert database.read_text() == '{"pets": {}}' and SERVED == []


def test_the_ready_file_is_written_through_no_link_planted_beside_it(tmp_path):
    victim = tmp_path / 'victim.txt'
    victim.write_text('untouched')
    ready = tmp_path / 'ready.json'
    for pid in range(os.getpid() - 5, os.getpid() + 300):  # where a guessable name would be
        (tmp_path / f'.ready.json.{pid}.tmp').symlink_to(victim)
    while_serving = recording(lambda server: json.loads(ready.read_text())['pid'])
    assert main(['--port', '0', '--db', ':memory:', '--ready-file', str(ready)],
                server_class=while_serving) == 0
    assert SERVED == [os.getpid()] and victim.read_text() == 'untouched'


@pytest.mark.parametrize('renamed', [pytest.param(True, id='renamed over it'),
                                     pytest.param(False, id='removed, then written anew')])
def test_a_clean_stop_leaves_a_ready_file_another_stub_wrote_since(tmp_path, renamed):
    ready = tmp_path / 'ready.json'
    other = tmp_path / 'other.json' if renamed else ready

    def another_stub_writes_its_own(server):
        ready.unlink()  # as a script does before it starts the next stub; the inode may be reused
        other.write_text('{"url": "http://127.0.0.1:1/v1", "pid": 1}\n')
        other.replace(ready)
    assert main(['--port', '0', '--db', ':memory:', '--ready-file', str(ready)],
                server_class=recording(another_stub_writes_its_own)) == 0
    assert json.loads(ready.read_text())['pid'] == 1


def test_the_send_timeout_reaches_the_server():
    assert main(['--port', '0', '--db', ':memory:', '--send-timeout', '2.5'],
                server_class=NotServing) == 0
    assert SERVED[0].send_timeout == 2.5


#: How the stub marks a file it writes, with the pid of the stub that wrote it.
MARKS = {'--ready-file': '{{"written_by": "petstore-stub pid {pid}", "url": "http://[::1]:9/v1"}}',
         '--tls-ca-file': 'written_by: petstore-stub pid {pid}\n-----BEGIN CERTIFICATE-----\nMII'}


@pytest.mark.parametrize('flag', ['--ready-file', '--tls-ca-file'])
@pytest.mark.parametrize('held', [
    pytest.param('{"url": "https://example.com/config", "token": "keepme"}',
                 id="a JSON file of one's own"),
    pytest.param('-----BEGIN CERTIFICATE-----\nMIIBmkcert\n-----END CERTIFICATE-----\n',
                 id='a CA certificate'),
    pytest.param('{"url": "http://127.0.0.1:1/v1", "pid": 1}', id='a ready file with no mark'),
    pytest.param('running', id="the mark of a stub that runs"),
    pytest.param('written_by: petstore-stub pid 1x\n', id='a mark with no pid'),
    pytest.param('{"written_by": "petstore-stub pid 4194999"}KEEP ME: notes',
                 id='a mark followed by what the stub never writes'),
])
def test_a_file_the_stub_cannot_prove_it_left_is_refused_with_status_2_and_kept_byte_for_byte(
        capsys, tmp_path, flag, held):
    path = tmp_path / 'held'
    held = MARKS[flag].format(pid=os.getppid()) if held == 'running' else held
    path.write_bytes(held.encode())
    with pytest.raises(SystemExit) as exited:
        main(['--db', ':memory:', flag, str(path)])
    assert exited.value.code == 2 and SERVED == []
    assert f"{flag} {path} holds something other than a stopped stub's" in capsys.readouterr().err
    assert path.read_bytes() == held.encode()


@pytest.fixture
def zombie_pid():
    """The pid of a process killed and not yet reaped by its parent, as a test harness may leave."""
    process = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    process.kill()
    stat = Path(f'/proc/{process.pid}/stat')
    if not stat.exists():
        pytest.skip('no /proc here')
    wait_until(lambda: stat.read_text().rpartition(')')[2].split()[0] == 'Z')
    yield lambda: process.pid
    process.wait()


@pytest.mark.parametrize('flag', ['--ready-file', '--tls-ca-file'])
@pytest.mark.parametrize('pid', [pytest.param(gone_pid, id='a pid now gone'),
                                 pytest.param(lambda: 9_999_999, id='a 7-digit pid, past pid_max'),
                                 pytest.param(os.getpid, id='its own pid, reused'),
                                 pytest.param('zombie', id='a killed one, not yet reaped')])
def test_a_file_whose_mark_names_a_stub_now_gone_is_taken(tmp_path, request, flag, pid):
    pid = request.getfixturevalue('zombie_pid') if pid == 'zombie' else pid
    path = tmp_path / 'left'
    path.write_text(MARKS[flag].format(pid=pid()))
    flags = ['--tls', '--tls-ca-file', str(path)] if flag == '--tls-ca-file' else [flag, str(path)]
    while_serving = recording(lambda server: path.read_text().split('\n')[0])
    assert main(['--port', '0', '--db', ':memory:', *flags], server_class=while_serving) == 0
    assert SERVED[0].startswith(MARKS[flag].format(pid=os.getpid()).split('\n')[0][:40])
    assert not path.exists()


@pytest.mark.parametrize('flag', ['--ready-file', '--tls-ca-file'])
@pytest.mark.parametrize('make', [
    pytest.param(lambda path: os.mkfifo(path), id='a FIFO, which would block'),
    pytest.param(lambda path: path.symlink_to('/dev/null'), id='a device, which reads empty'),
    pytest.param(lambda path: path.symlink_to(path.with_name('nowhere')), id='a dangling link'),
])
def test_a_file_that_is_not_a_regular_file_is_refused_and_left(capsys, tmp_path, flag, make):
    path = tmp_path / 'special'
    make(path)
    with pytest.raises(SystemExit) as exited:
        main(['--db', ':memory:', flag, str(path)])
    assert exited.value.code == 2 and SERVED == [] and not path.is_file()
    assert path.is_symlink() or path.is_fifo()  # left as it was


def test_a_ca_file_name_that_is_not_utf_8_is_refused_before_anything_is_written(capsys,
                                                                                tmp_path):
    ca, ready = tmp_path / 'ca\udcff.pem', tmp_path / 'ready.json'  # the byte 0xff, as argv has it
    with pytest.raises(SystemExit) as exited:
        main(['--db', ':memory:', '--tls-ca-file', str(ca), '--ready-file', str(ready)])
    assert exited.value.code == 2 and SERVED == [] and list(tmp_path.iterdir()) == []
    assert 'is not UTF-8' in capsys.readouterr().err


def test_a_ready_file_another_wrote_after_the_flags_were_checked_is_not_written_over(capsys,
                                                                                     tmp_path):
    ready = tmp_path / 'ready.json'

    class Planting(NotServing):
        def bind(self) -> None:  # between the check of the flags and the write of the file
            super().bind()
            ready.write_text('{"theirs": true}')
    assert main(['--port', '0', '--db', ':memory:', '--ready-file', str(ready)],
                server_class=Planting) == 1
    assert f'cannot write {ready}' in capsys.readouterr().err and SERVED == []
    assert ready.read_text() == '{"theirs": true}'


def test_a_ready_file_another_wrote_while_the_stub_wrote_its_own_is_not_written_over(
        capsys, tmp_path, monkeypatch):
    ready, make = tmp_path / 'ready.json', tempfile.mkstemp

    def planting(*args, **kwargs):  # after the last check, before the file takes its name
        made = make(*args, **kwargs)
        ready.write_text('{"theirs": true}')
        return made
    monkeypatch.setattr(tempfile, 'mkstemp', planting)
    assert main(['--port', '0', '--db', ':memory:', '--ready-file', str(ready)],
                server_class=NotServing) == 1
    assert f'cannot write {ready}: File exists' in capsys.readouterr().err and SERVED == []
    assert ready.read_text() == '{"theirs": true}'
    assert [path.name for path in tmp_path.iterdir()] == ['ready.json']


def test_a_ready_file_that_cannot_be_written_stops_the_stub_before_its_banner(capsys):
    assert main(['--port', '0', '--db', ':memory:', '--ready-file', '/proc/self/ready.json'],
                server_class=NotServing) == 1
    out, err = capsys.readouterr()
    assert 'cannot write /proc/self/ready.json' in err
    assert 'serving' not in out and SERVED == []


@pytest.mark.parametrize('port', ['0', '65535', '08080'])
def test_a_port_in_range_is_taken_as_its_number(port):
    assert main(['--port', port], server_class=NotBoundServingOnce) == 0
    assert SERVED[0].port == int(port)


def test_a_database_in_a_missing_folder_is_refused_in_one_line(capsys, tmp_path):
    assert main(['--db', str(tmp_path / 'no' / 'such' / 'pets.json')]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert 'cannot use this database (No such file or directory)' in err
    assert '--db :memory:' in err


@pytest.mark.slow  # as root, a mount and a umount process for the read-only folder
def test_the_default_database_in_a_folder_that_cannot_be_written_is_refused_in_one_line(
        capsys, read_only_folder, monkeypatch):
    monkeypatch.chdir(read_only_folder)
    assert main([]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert err.startswith('petstore-stub: petstore.json: cannot use this database (')
    assert '--db :memory:' in err


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder this process cannot write to: by its mode, or (as root) a read-only mount."""
    folder = tmp_path / 'read-only'
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        return
    mounted = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', str(folder)],
                             capture_output=True)
    if mounted.returncode:
        pytest.skip('root may write to any folder, and this machine lets no read-only mount in')
    yield folder
    subprocess.run(['umount', '-l', str(folder)], check=True)


def copied_over(path):
    shutil.copy(path, path.with_name('p.json.new'))
    path.with_name('p.json.new').replace(path)


def saved_by_an_editor(path):
    """As vim saves by default: the old file kept as a backup, the text written anew."""
    text = path.read_text()
    path.replace(path.with_name('p.json~'))
    path.write_text(text)


def moved_over(path):
    path.with_name('other.json').write_text('{"pets": {}}')
    path.with_name('other.json').replace(path)


@pytest.mark.parametrize('replace', [
    pytest.param(lambda path: path.rename(path.with_name('moved.json')), id='mv away'),
    pytest.param(moved_over, id='mv of another file over it'),
    pytest.param(copied_over, id='cp, then mv over it'),
    pytest.param(saved_by_an_editor, id="an editor's save"),
    pytest.param(lambda path: subprocess.run(['sed', '-i', 's/one/one/', str(path)], check=True),
                 id='sed -i', marks=pytest.mark.slow),  # a sed process
    pytest.param(lambda path: path.with_name('p.json.log').unlink(), id='its log removed'),
    pytest.param(lambda path: path.with_name('p.json.log').rename(path.with_name('moved.log')),
                 id='its log renamed'),
])
def test_a_second_stub_on_a_replaced_database_is_refused_in_one_line_and_nothing_is_lost(
        capsys, tmp_path, replace):
    path = tmp_path / 'p.json'
    with stub.StubStore(path) as first:
        first.add({'name': 'one', 'categoryId': 1})
        replace(path)
        assert main(['--port', '0', '--db', str(path)]) == 1
        err = capsys.readouterr().err
        assert err.count('\n') == 1
        assert 'using this database; give each stub its own file, or :memory:' in err
        assert first.add({'name': 'fromA', 'categoryId': 1})['id'] == 2
    with stub.StubStore(path) as restarted:
        assert [pet['name'] for pet in listed(restarted)] == ['one', 'fromA']


def test_a_store_with_pets_is_left_as_it_is_by_fixtures_and_the_banner_says_so(capsys):
    assert main(['--port', '0', '--fixtures']) == 0
    capsys.readouterr()
    assert main(['--port', '0', '--fixtures', '--quiet']) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert '13 pets' in first_line and '--fixtures skipped: the store is not empty' in first_line


def test_the_readmes_one_step_starts_a_demo_again_from_the_demo_animals(capsys):
    assert '`rm petstore.json`, then the command above' in (MODULE.parent / 'README.md').read_text()
    assert main(['--port', '0', '--fixtures']) == 0
    with stub.StubStore('petstore.json') as store:  # the tour adds a pet
        store.add({'name': 'Pip', 'categoryId': 3})
    Path('petstore.json').unlink()  # the step
    capsys.readouterr()
    assert main(['--port', '0', '--fixtures', '--quiet']) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(
        ': 13 pets in petstore.json, 13 loaded from fixtures')
    assert os.listdir('.') == ['petstore.json']


@pytest.mark.parametrize('count, words', [(0, '0 pets'), (1, '1 pet in'), (2, '2 pets')])
def test_the_banner_counts_pets_in_words(capsys, tmp_path, count, words):
    path = tmp_path / 'pets.json'
    path.write_text(json.dumps({'pets': {str(n): {'name': 'Rex', 'categoryId': 1}
                                         for n in range(1, count + 1)}}))
    assert main(['--port', '0', '--db', str(path)]) == 0
    assert words in capsys.readouterr().out.splitlines()[0]


def test_a_line_at_shutdown_says_what_was_kept(capsys):
    assert main(['--port', '0', '--fixtures']) == 0
    assert capsys.readouterr().out.splitlines()[-1] == \
        'petstore-stub stopped: 13 pets in petstore.json'


# -- as a process: signals, refusals, the version, the Host check ----------------------

@pytest.mark.slow  # a stub process, to signal
@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_stop_with_status_0(tmp_path, signum):
    server = StubProcess('--db', str(tmp_path / 'pets.json'))
    assert call_once(server.url, 'GET', '/v1/pets') == (200, [])
    assert server.stop(signum) == 0
    assert os.listdir(tmp_path) == ['pets.json']  # its log folded in and removed


@pytest.mark.slow  # a stub process, to signal
def test_a_clean_stop_with_admin_says_on_stderr_what_the_calls_never_met(tmp_path):
    server = StubProcess('--db', ':memory:', '--admin', '--quiet')
    assert call_once(server.url, 'GET', '/v1/pets') == (200, [])
    assert server.stop(signal.SIGTERM) == 0
    never = [f'{operation} {status}'
             for operation, statuses in never_met('listPets 200').items() for status in statuses]
    assert server.process_stderr == (f'coverage: 1 of {len(never) + 1} documented responses met; '
                                     f'never: {", ".join(never)}\n')


@pytest.mark.slow  # a 300,000-pet file, written anew at the stop
def test_a_second_sigterm_while_the_stub_folds_its_log_is_ignored(tmp_path):
    db = tmp_path / 'pets.json'
    # A fold rewrites every pet: with 100,000 of them it takes a tenth of a second or more.
    db.write_text(json.dumps({'pets': {str(n): {'name': f'p{n}', 'categoryId': 1}
                                       for n in range(1, 100_001)}}))
    server = StubProcess('--db', str(db), '--quiet')
    assert call_once(server.url, 'POST', '/v1/pets', {'name': 'Rex', 'categoryId': 1})[0] == 201
    server.process.send_signal(signal.SIGTERM)
    assert server.process.stdout.readline().startswith('petstore-stub stopped: 100001 pets')
    assert server.process.poll() is None  # still folding
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=60) == 0
    assert server.process.stderr.read() == ''
    assert os.listdir(tmp_path) == ['pets.json']  # the log folded in, and removed
    pets = json.loads(db.read_text())['pets']
    assert len(pets) == 100_001 and pets['100001'] == {'name': 'Rex', 'categoryId': 1}


@pytest.mark.slow  # a process; the corrupt-database test above is the fast one
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


@pytest.mark.slow  # a process; the fixtures-once test above is the fast one
def test_the_default_database_is_petstore_json_in_the_working_directory(tmp_path):
    server = StubProcess('--fixtures', '--quiet', cwd=tmp_path)
    status, pets = call_once(server.url, 'GET', '/v1/pets?limit=100')
    server.stop(signal.SIGTERM)
    assert status == 200 and len(pets) == 13
    assert len(json.loads((tmp_path / 'petstore.json').read_text())['pets']) == 13
    assert os.listdir(tmp_path) == ['petstore.json']


@pytest.mark.slow  # three processes, one for each way to run it
@pytest.mark.parametrize('command', [
    pytest.param([sys.executable, '-m', 'petstore_stub'], id='python -m petstore_stub'),
    pytest.param([sys.executable, str(MODULE)], id='python petstore_stub.py'),
    pytest.param([str(Path(sys.executable).with_name('petstore-stub'))], id='petstore-stub'),
])
def test_every_way_to_run_it_shows_the_version(command):
    # python -m looks in the working directory first: run it in this tree, not in the folder
    # a_fresh_start gives each test.
    result = subprocess.run([*command, '--version'], capture_output=True, text=True, timeout=30,
                            cwd=MODULE.parent)
    assert result.stdout == f'petstore-stub {stub.__version__}\n'


def test_the_package_takes_its_version_from_the_module():
    assert importlib.metadata.version('petstore-stub') == stub.__version__
    assert 'dynamic = ["version"]' in (MODULE.parent / 'pyproject.toml').read_text()


@pytest.mark.slow  # a stub process
@pytest.mark.parametrize('flags, host, status', [
    pytest.param([], 'evil.example:{port}', 421, id='a foreign name'),
    pytest.param(['--admin', '--cors'], 'evil.example:{port}', 421,
                 id='a foreign name, with --admin and --cors'),
    pytest.param([], 'localhost:{port}', 200, id='localhost'),
    pytest.param(['--allow-host', 'pets.local'], 'pets.local:{port}', 200, id='--allow-host'),
    pytest.param(['--host', '0.0.0.0', '--api-key', 'network-key'], 'evil.example:{port}', 200,
                 id='on every interface, any name'),
])
def test_the_command_line_checks_the_host_on_loopback_only(flags, host, status):
    process = StubProcess('--db', ':memory:', '--fixtures', '--quiet', *flags)
    port = int(process.url.split(':')[2].split('/')[0])
    key = flags[flags.index('--api-key') + 1] if '--api-key' in flags else stub.DEMO_API_KEY
    auth = {'Authorization': f'Bearer {key}'}
    created = send(port, 'POST', '/v1/pets', host, {'name': 'Evil', 'categoryId': 1}, auth)[0]
    assert created == (201 if status == 200 else 421)
    if '--admin' in flags:
        assert send(port, 'POST', '/__admin/reset', host)[0] == 421
    pets = json.loads(send(port, 'GET', '/v1/pets?limit=100', headers=auth)[2])
    assert len(pets) == (14 if status == 200 else 13)  # the demo animals are all still there
    assert process.stop(signal.SIGTERM) == 0


# -- a closed or stalled stdout or stderr never costs a request ---------------------------

@pytest.mark.slow  # a stub process, for a stdout to close
def test_a_closed_stdout_costs_no_request_and_is_reported_once():
    """``petstore-stub | head -n 3``: head exits, and every create still gets its 201, once."""
    server = StubProcess('--db', ':memory:')
    server.process.stdout.close()  # as head does once it has its lines
    port = port_of(server.url)
    statuses = [raw_post(port, b'{"name": "Rex", "categoryId": 1}') for _ in range(5)]
    connection = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    connection.request('GET', '/v1/pets', headers=AUTH)
    pets = json.loads(connection.getresponse().read())
    connection.close()
    assert server.stop(signal.SIGTERM, stdout_closed=True) == 0
    assert statuses == [201] * 5
    assert [pet['id'] for pet in pets] == [1, 2, 3, 4, 5]
    assert server.process_stderr.count('the access log cannot be written') == 1
    assert 'Traceback' not in server.process_stderr


@pytest.mark.slow
def test_a_quiet_stub_whose_stdout_closed_names_stdout_not_an_access_log():
    """A quiet stub has no access log; its last line, on a stop, is what cannot be written."""
    server = StubProcess('--db', ':memory:', '--quiet')
    server.process.stdout.close()
    assert server.stop(signal.SIGTERM, stdout_closed=True) == 0
    assert server.process_stderr.count('stdout cannot be written') == 1
    assert 'access log' not in server.process_stderr


@pytest.mark.slow
def test_a_stdout_nobody_reads_costs_no_request_and_lets_the_stub_stop():
    """Before, the server stalled after about 2,100 requests once the pipe was full."""
    server = StubProcess('--db', ':memory:')  # its stdout is a pipe this test never reads again
    connection = http.client.HTTPConnection('127.0.0.1', port_of(server.url), timeout=10)
    for _ in range(4000):
        connection.request('GET', '/v1/pets?limit=1', headers=AUTH)
        response = connection.getresponse()
        response.read()
        assert response.status == 200
    connection.close()
    assert server.stop(signal.SIGTERM) == 0
    assert server.process_stderr.count('nobody is reading the access log') == 1


@pytest.mark.slow
def test_a_stub_started_with_stdout_closed_says_so_on_stderr_and_serves():
    """``petstore-stub >&-``: nowhere to print the banner, so stderr says where it went."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(['sh', '-c', 'exec "$0" "$@" >&-', sys.executable, str(MODULE),
                                '--db', ':memory:', '--port', str(port)],
                               stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: is_listening(port) or process.poll() is not None)
        assert raw_post(port, b'{"name": "Rex", "categoryId": 1}') == 201
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
        stderr = process.stderr.read()
        process.stderr.close()
    assert stderr == 'petstore-stub: stdout is closed; the banner and the access log go nowhere\n'


def is_listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(('127.0.0.1', port), timeout=1):
        return True
    return False


@pytest.mark.slow
def test_a_stderr_nobody_reads_costs_no_request_and_lets_the_stub_stop(tmp_path):
    """Before, each traceback written to a full stderr pipe held a worker thread, until all
    16 were held and the stub answered nothing, nor stopped."""
    script = tmp_path / 'failing_stub.py'
    script.write_text(f'import sys\nsys.path.insert(0, {str(MODULE.parent)!r})\n'
                      'import petstore_stub as stub\n'
                      'stub.check_bearer = lambda *args: 1 / 0  # each call is a 500\n'
                      'raise SystemExit(stub.main())\n')
    server = StubProcess('--db', ':memory:', '--quiet', script=script)  # stderr: never read
    connection = http.client.HTTPConnection('127.0.0.1', port_of(server.url), timeout=10)
    for _ in range(300):  # about 1.5 KB of traceback each: far more than a pipe holds
        connection.request('GET', '/v1/pets', headers=AUTH)
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())['code']) == (500, 'internal_error')
    connection.close()
    assert server.stop(signal.SIGTERM) == 0
    assert 'ZeroDivisionError' in server.process_stderr
