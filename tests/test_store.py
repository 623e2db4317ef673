"""The pet store over both storages, the crash-safe JSON file and its log, and the stub as a
process that keeps every acknowledged pet through kill -9 and a full disk."""

import contextlib
import http.client
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tinydb import TinyDB

import petstore_stub as stub
from conftest import (
    AUTH,
    JSON_HEADERS,
    MODULE,
    StubProcess,
    call,
    connect,
    fetched,
    listed,
    port_of,
    wait_until,
)
from petstore_stub import DatabaseError, StubStore

REX = {'name': 'Rex', 'categoryId': 1, 'status': 'available'}
MYSTERY = {'name': 'Mystery', 'categoryId': 2}


def test_add_returns_the_pet_with_its_new_id(store):
    assert store.add(REX) == {'id': 1, **REX}
    assert store.add(MYSTERY) == {'id': 2, **MYSTERY}
    assert len(store) == 2


def test_get_finds_a_pet_by_id_and_nothing_else(store):
    store.add(REX)
    assert fetched(store, 1) == {'id': 1, **REX}
    assert fetched(store, 2) is None
    assert fetched(store, 0) is None
    assert fetched(store, -1) is None


def test_list_filters_then_limits(store):
    store.add_many([{'name': f'p{n}', 'categoryId': 1, 'status': s}
                    for n, s in enumerate(['sold', 'available', 'sold', 'sold'])])
    assert [pet['id'] for pet in listed(store, 2, 'sold')] == [1, 3]
    assert [pet['id'] for pet in listed(store)] == [1, 2, 3, 4]


def test_reset_empties_the_store_and_restarts_ids(store):
    store.add(REX)
    store.reset()
    assert listed(store) == []
    assert store.add(MYSTERY)['id'] == 1


def test_concurrent_adds_get_distinct_ids(store):
    def worker():
        for _ in range(25):
            store.add(REX)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [pet['id'] for pet in listed(store)] == list(range(1, 101))
    assert len(store) == 200


# -- the file and its log ---------------------------------------------------------

def crash_copy(folder, into):
    """The files as a crash would leave them now, in a new folder: no close, no checkpoint."""
    into.mkdir()
    for path in folder.glob('pets.json*'):
        shutil.copy(path, into / path.name)
    return into / 'pets.json'


def test_a_missing_file_is_created_empty(tmp_path):
    path = tmp_path / 'new.json'
    with StubStore(path):
        assert json.loads(path.read_text()) == {
            'pets': {}, '_petstore': {'1': {'format': 2, 'last_ids': {'pets': 0}}}}


def test_every_add_is_on_disk_when_it_returns(tmp_path):
    folder = tmp_path / 'live'
    folder.mkdir()
    with StubStore(folder / 'pets.json') as store:
        store.add(REX)
        with StubStore(crash_copy(folder, tmp_path / 'crash1')) as after_crash:
            assert listed(after_crash) == [{'id': 1, **REX}]
        store.add(MYSTERY)
        with StubStore(crash_copy(folder, tmp_path / 'crash2')) as after_crash:
            assert listed(after_crash) == [{'id': 1, **REX}, {'id': 2, **MYSTERY}]


def test_an_add_appends_one_line_to_a_synchronous_log_and_leaves_the_file_alone(tmp_path):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    with StubStore(path) as store:
        file_before = path.read_bytes()
        store.add(REX)
        assert path.read_bytes() == file_before
        assert log.read_text() == json.dumps({'put': {'pets': {'1': REX}}}) + '\n'
        assert open_flags(log) & os.O_DSYNC == os.O_DSYNC


def open_flags(path):
    """The flags this process opened ``path`` with (Linux)."""
    for fd in os.listdir('/proc/self/fd'):
        if os.path.realpath(f'/proc/self/fd/{fd}') == str(path):
            fdinfo = Path(f'/proc/self/fdinfo/{fd}').read_text()
            fdinfo = dict(line.split(':', 1) for line in fdinfo.splitlines())
            return int(fdinfo['flags'], 8)
    raise AssertionError(f'{path} is not open')


def queue_behind_the_first_write(store, threads, first_write_started, more_adds_waiting):
    """Run ``threads``' adds so that all but the first are queued while its write is held."""
    threads[0].start()
    first_write_started.wait(timeout=10)
    for thread in threads[1:]:
        thread.start()
    wait_until(lambda: len(store._table._batch) == len(threads) - 1)
    more_adds_waiting.set()
    for thread in threads:
        thread.join(timeout=10)


def test_one_write_serves_the_adds_that_wait_for_it(tmp_path, monkeypatch):
    writes = []
    real_append = stub.append_durably
    first_write_started, more_adds_waiting = threading.Event(), threading.Event()

    def slow_disk(descriptor, data):
        writes.append(data.count(b'\n'))
        first_write_started.set()
        more_adds_waiting.wait(timeout=10)
        real_append(descriptor, data)

    with StubStore(tmp_path / 'pets.json') as store:
        monkeypatch.setattr(stub, 'append_durably', slow_disk)
        threads = [threading.Thread(target=store.add, args=(REX,)) for _ in range(8)]
        queue_behind_the_first_write(store, threads, first_write_started, more_adds_waiting)
        assert len(store) == 8
    assert writes == [1, 7]  # the seven adds that came during the first write shared the next


def test_a_bug_in_a_shared_write_fails_every_add_it_carries_and_the_next_write_succeeds(
        tmp_path, monkeypatch):
    real_append = stub.append_durably
    first_write_started, more_adds_waiting = threading.Event(), threading.Event()
    outcomes = []

    def disk(descriptor, data):
        if not first_write_started.is_set():
            first_write_started.set()
            more_adds_waiting.wait(timeout=10)
            return real_append(descriptor, data)
        raise RuntimeError('a bug in the shared write')

    def add():
        try:
            outcomes.append(store.add(REX)['id'])
        except (RuntimeError, stub.ApiError) as error:
            outcomes.append(type(error).__name__)

    with StubStore(tmp_path / 'pets.json') as store:
        monkeypatch.setattr(stub, 'append_durably', disk)
        threads = [threading.Thread(target=add) for _ in range(4)]
        queue_behind_the_first_write(store, threads, first_write_started, more_adds_waiting)
        assert not any(thread.is_alive() for thread in threads)
        assert sorted(map(str, outcomes)) == ['1', 'ApiError', 'ApiError', 'RuntimeError']
        monkeypatch.setattr(stub, 'append_durably', real_append)
        assert store.add(REX)['id'] == 2
        assert len(store) == 2


def test_close_folds_the_log_into_a_plain_tinydb_file(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path) as store:
        store.add_many([REX, MYSTERY])
    assert [p.name for p in tmp_path.iterdir()] == ['pets.json']
    with TinyDB(path) as db:
        assert db.table('pets').get(doc_id=2) == MYSTERY
        assert len(db.table('pets')) == 2


def test_a_long_log_is_folded_into_the_file(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path, checkpoint_lines=3) as store:
        for _ in range(4):
            store.add(REX)
        # Three lines were logged; the fourth add wrote the file and emptied the log.
        assert len(json.loads(path.read_text())['pets']) == 4
        assert (tmp_path / 'pets.json.log').read_bytes() == b''
        store.add(MYSTERY)
        with StubStore(crash_copy(tmp_path, tmp_path / 'crash')) as after_crash:
            assert len(after_crash) == 5


def test_a_fold_with_no_room_for_the_new_file_leaves_creates_to_the_log(tmp_path, monkeypatch):
    """A disk with room for a line of the log, and none for a copy of the database."""
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    folds = []

    def no_room(storage: stub.LockedJSONStorage, data: dict) -> None:
        folds.append(len(data['pets']))
        raise OSError(28, 'No space left on device')
    with StubStore(path, checkpoint_lines=3) as store:
        monkeypatch.setattr(stub.LockedJSONStorage, 'write', no_room)
        added = [store.add(REX)['id'] for _ in range(10)]
        assert added == list(range(1, 11))  # each acknowledged, in the log
        assert len(folds) == 2  # at 3 lines, then at twice the log: not at every create
        assert len(log.read_bytes().splitlines()) == 10
        crashed = crash_copy(tmp_path, tmp_path / 'crash')  # the files as a kill -9 leaves them
        monkeypatch.undo()  # room again: the next fold, at the stop, takes the log in
    assert (len(json.loads(path.read_text())['pets']), log.exists()) == (10, False)
    with StubStore(crashed) as after_crash:
        assert len(after_crash) == 10


def test_a_log_as_long_as_the_file_is_folded_into_it(tmp_path):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    with StubStore(path) as store:
        store.add_many([REX] * 5)
    with StubStore(path, checkpoint_lines=2) as store:
        for _ in range(5):
            store.add(MYSTERY)
        assert len(log.read_bytes().splitlines()) == 5  # as many lines as the file has pets
        store.add(MYSTERY)
        assert (len(json.loads(path.read_text())['pets']), log.read_bytes()) == (11, b'')


def test_a_log_replayed_over_a_file_that_holds_it_changes_nothing(tmp_path, monkeypatch):
    """A crash between writing the file and emptying the log."""
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    with StubStore(path) as store:
        store.add(REX)
        store.reset()
        store.add_many([MYSTERY, REX])
        old_log = log.read_bytes()
    log.write_bytes(old_log)  # close wrote the file; put the log back as if it had not been emptied
    with StubStore(path) as reopened:
        assert listed(reopened) == [{'id': 1, **MYSTERY}, {'id': 2, **REX}]


def test_a_reset_is_durable(tmp_path):
    with StubStore(tmp_path / 'pets.json') as store:
        store.add_many([REX, REX])
        store.reset()
        store.add(MYSTERY)
        copy = crash_copy(tmp_path, tmp_path / 'crash')
    with StubStore(copy) as after_crash:
        assert listed(after_crash) == [{'id': 1, **MYSTERY}]


def test_a_line_cut_short_by_a_crash_is_left_out(tmp_path):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    path.write_text('{"pets": {}}')
    log.write_text(json.dumps({'insert': {'pets': {'1': REX}}}) + '\n{"insert": {"pets": {"2"')
    with StubStore(path) as store:
        assert listed(store) == [{'id': 1, **REX}]
        assert store.add(MYSTERY)['id'] == 2
    assert json.loads(path.read_text())['pets'] == {'1': REX, '2': MYSTERY}


def full_disk(descriptor, data):
    raise OSError(28, 'No space left on device')


def test_a_failed_write_is_a_500_and_stores_nothing_and_the_next_write_succeeds(tmp_path,
                                                                                  monkeypatch):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    with StubStore(path) as store:
        store.add(REX)
        file_before, log_before = path.read_bytes(), log.read_bytes()
        real_append = stub.append_durably
        monkeypatch.setattr(stub, 'append_durably', full_disk)
        with pytest.raises(stub.ApiError) as caught:
            store.add(MYSTERY)
        assert (caught.value.status_code, caught.value.code) == (500, 'storage_error')
        assert 'No space left on device' in caught.value.message
        assert (listed(store), fetched(store, 2), len(store)) == ([{'id': 1, **REX}], None, 1)
        assert (path.read_bytes(), log.read_bytes()) == (file_before, log_before)
        monkeypatch.setattr(stub, 'append_durably', real_append)
        assert store.add(REX)['id'] == 2  # id 2 was never shown to anyone
        with StubStore(crash_copy(tmp_path, tmp_path / 'crash')) as after_crash:
            assert listed(after_crash) == listed(store) == [{'id': 1, **REX}, {'id': 2, **REX}]


def test_a_failed_sync_of_the_emptied_log_leaves_it_readable_for_the_next_lines(tmp_path,
                                                                                monkeypatch):
    path, real_fsync = tmp_path / 'pets.json', os.fsync

    def fsync(descriptor):
        if os.readlink(f'/proc/self/fd/{descriptor}').endswith('.log'):
            raise OSError(5, 'Input/output error')
        real_fsync(descriptor)

    with StubStore(path, checkpoint_lines=2) as store:
        store.add_many([REX])
        store.add_many([REX])
        monkeypatch.setattr(stub.os, 'fsync', fsync)
        store.add(MYSTERY)  # folded into the file; the emptied log's sync fails
        monkeypatch.undo()
        store.add(REX)
        with StubStore(crash_copy(tmp_path, tmp_path / 'crash')) as after_crash:
            assert listed(after_crash) == listed(store)
            assert len(store) == 4


def test_a_failed_reset_keeps_the_pets_and_their_ids(tmp_path, monkeypatch):
    with StubStore(tmp_path / 'pets.json') as store:
        store.add_many([REX, REX])
        monkeypatch.setattr(stub, 'append_durably', full_disk)
        with pytest.raises(stub.ApiError, match='storage_error|No space'):
            store.reset()
        monkeypatch.undo()
        assert [pet['id'] for pet in listed(store)] == [1, 2]
        assert store.add(MYSTERY)['id'] == 3


def test_a_temporary_file_a_crashed_fold_left_read_only_is_written_over_and_gone(tmp_path):
    path, left = tmp_path / 'pets.json', tmp_path / '.pets.json.tmp'
    left.write_text('{"pets": {"1": {"name": "half a fo')
    left.chmod(0o400)
    with StubStore(path) as store:
        store.add(REX)
    assert not left.exists() and sorted(os.listdir(tmp_path)) == ['pets.json']
    with StubStore(path) as reopened:
        assert listed(reopened) == [{'id': 1, **REX}]


def test_a_write_cut_short_is_cut_off_the_log(tmp_path, monkeypatch):
    """A disk with room for part of a line: the line is cut off, and the next write follows a whole one."""
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    with StubStore(path) as store:
        store.add(REX)
        whole = log.read_bytes()

        def half_full_disk(descriptor, data):
            os.write(descriptor, data[:5])
            raise OSError(28, 'No space left on device')

        monkeypatch.setattr(stub, 'append_durably', half_full_disk)
        with pytest.raises(stub.ApiError):
            store.add(MYSTERY)
        assert log.read_bytes() == whole
        monkeypatch.undo()
        store.add(MYSTERY)
        with StubStore(crash_copy(tmp_path, tmp_path / 'crash')) as after_crash:
            assert listed(after_crash) == [{'id': 1, **REX}, {'id': 2, **MYSTERY}]


def test_ids_continue_after_a_restart(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path) as store:
        store.add_many([REX, MYSTERY])
    with StubStore(path) as reopened:
        assert listed(reopened) == [{'id': 1, **REX}, {'id': 2, **MYSTERY}]
        assert reopened.add(REX)['id'] == 3



#: The first int past what a 64-bit float holds exactly: 2**53 + 1 reads back as 2**53.
PAST_2_53 = 2 ** 53 + 1


@pytest.mark.parametrize('first_id', [1, PAST_2_53, stub.INT64_MAX])
def test_ids_start_at_the_first_id_and_a_reset_goes_back_to_it(tmp_path, first_id):
    with StubStore(tmp_path / 'pets.json', first_id=first_id) as durable:
        for store in (stub.PetStore(first_id), durable):
            assert store.add(REX)['id'] == first_id
            store.reset()
            assert store.add(MYSTERY)['id'] == first_id
            assert fetched(store, first_id) == {'id': first_id, **MYSTERY}


@pytest.mark.parametrize('first_id', [0, -1, stub.INT64_MAX + 1, True, 2.0, '5', None])
def test_a_first_id_that_is_no_int64_from_1_is_refused(first_id):
    with pytest.raises(ValueError, match='the first id is a whole number from 1 to '):
        stub.PetStore(first_id)


def test_the_ids_past_the_first_id_run_out_at_int64_s_maximum_with_a_507():
    top = stub.StubStore(first_id=stub.INT64_MAX - 1)
    assert [pet['id'] for pet in top.add_many([REX, REX])] == [stub.INT64_MAX - 1, stub.INT64_MAX]
    with pytest.raises(stub.ApiError) as refused:
        top.add(REX)
    assert (refused.value.status_code, refused.value.code) == (507, 'ids_exhausted')


def test_ids_from_a_first_id_survive_a_restart_and_are_never_given_twice(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path, first_id=PAST_2_53) as store:
        store.add_many([REX, MYSTERY])
    with StubStore(path) as reopened:  # started without it: it goes on after the last id given
        assert reopened.add(REX)['id'] == PAST_2_53 + 2
    with StubStore(path, first_id=10 ** 17) as moved:  # a first id past the last moves them on
        assert moved.add(REX)['id'] == 10 ** 17


def remove(store, pet_id):
    """A change the API does not make (it removes no pet), made as a DELETE would make it."""
    store.change(lambda tables: stub.Change('remove', 'pets', {pet_id: None}))


def test_a_removed_pet_s_id_is_never_given_again(store):
    store.add_many([REX, MYSTERY])
    remove(store, 2)
    assert store.add(REX)['id'] == 3
    assert [pet['id'] for pet in listed(store)] == [1, 3]


def test_the_last_id_given_survives_a_crash_and_a_restart_with_its_pet_removed(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path) as store:
        store.add_many([REX, MYSTERY, REX])
        remove(store, 3)
        remove(store, 1)
        with StubStore(crash_copy(tmp_path, tmp_path / 'crash')) as after_crash:  # from the log
            assert listed(after_crash) == [{'id': 2, **MYSTERY}]
            assert after_crash.add(REX)['id'] == 4
        remove(store, 2)
    with StubStore(path) as reopened:  # from the file: no pet holds the last id
        assert (len(reopened), reopened.add(REX)['id']) == (0, 4)


def test_a_log_of_removes_replayed_over_a_file_that_holds_it_changes_nothing(tmp_path):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    with StubStore(path) as store:
        store.add_many([REX, MYSTERY])
        remove(store, 1)
        store.add(REX)
        remove(store, 3)
        old_log = log.read_bytes()
    log.write_bytes(old_log)  # as if a crash came between writing the file and emptying the log
    with StubStore(path) as reopened:
        assert listed(reopened) == [{'id': 2, **MYSTERY}]
        assert reopened.add(REX)['id'] == 4


def test_fixtures_go_into_a_store_whose_pets_were_all_removed(store):
    store.add(REX)
    remove(store, 1)
    pets = stub.add_fixtures(store, stub.read_fixtures())
    assert [pet['id'] for pet in pets] == list(range(2, len(pets) + 2))


def test_a_change_that_fails_changes_nothing_and_the_others_of_its_write_are_made(
        tmp_path, monkeypatch):
    real_append = stub.append_durably
    first_write_started, more_adds_waiting = threading.Event(), threading.Event()
    outcomes = []

    def slow_disk(descriptor, data):
        first_write_started.set()
        more_adds_waiting.wait(timeout=10)
        real_append(descriptor, data)

    def bug(tables):
        raise KeyError('a bug')

    def run(task):
        try:
            outcomes.append(task())
        except KeyError as error:
            outcomes.append(str(error))

    with StubStore(tmp_path / 'pets.json') as store:
        store.add(REX)
        monkeypatch.setattr(stub, 'append_durably', slow_disk)
        tasks = [lambda: store.add(REX)['id'], lambda: store.change(bug),
                 lambda: store.add(MYSTERY)['id']]
        threads = [threading.Thread(target=run, args=(task,)) for task in tasks]
        queue_behind_the_first_write(store, threads, first_write_started, more_adds_waiting)
        assert sorted(map(str, outcomes)) == ["'a bug'", '2', '3']
        assert [pet['id'] for pet in listed(store)] == [1, 2, 3]


def test_a_file_of_format_1_and_its_log_open_and_are_written_in_format_2(tmp_path):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    path.write_text(json.dumps({'pets': {'1': REX, '2': MYSTERY}}))
    log.write_text(json.dumps({'insert': {'pets': {'3': REX}}}) + '\n')
    with StubStore(path) as store:
        assert [pet['id'] for pet in listed(store)] == [1, 2, 3]
        assert store.add(REX)['id'] == 4
    assert json.loads(path.read_text())['_petstore'] == {
        '1': {'format': 2, 'last_ids': {'pets': 4}}}


@pytest.mark.slow  # a process of its own
@pytest.mark.parametrize('version', [3, 'two', 0])
def test_a_file_of_a_format_it_cannot_read_is_refused_in_one_line_before_anything_is_opened(
        tmp_path, version):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    content = json.dumps({'pets': {'1': REX}, '_petstore': {'1': {'format': version}}})
    path.write_text(content)
    refused = subprocess.run([sys.executable, str(MODULE), '--db', str(path), '--port', '0'],
                             capture_output=True, text=True, timeout=30)
    assert (refused.returncode, refused.stderr.count('\n')) == (1, 1), refused.stderr
    assert f'{path}: file format {version!r}; petstore-stub {stub.__version__} reads formats 1 to 2' in (
        refused.stderr)
    assert (path.read_text(), log.exists()) == (content, False)


def test_the_file_is_read_once_at_start(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path) as store:
        store.add(REX)
        path.write_text('garbage that a re-read would choke on')
        assert fetched(store, 1) == {'id': 1, **REX}
        assert listed(store) == [{'id': 1, **REX}]
        path.write_text('{}')


def test_a_second_store_on_the_same_file_is_refused_until_the_first_closes(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path):
        with pytest.raises(DatabaseError, match='another stub is using this database'):
            StubStore(path)
    with StubStore(path):
        pass


def test_a_tinydb_file_with_other_tables_keeps_them(tmp_path):
    path = tmp_path / 'pets.json'
    path.write_text(json.dumps({'_default': {'1': {'x': 1}}, 'pets': {'7': REX}}))
    with StubStore(path) as store:
        assert store.add(MYSTERY)['id'] == 8
        store.reset()
    assert json.loads(path.read_text()) == {'_default': {'1': {'x': 1}}, 'pets': {}, '_petstore': {
        '1': {'format': 2, 'last_ids': {'pets': 0, '_default': 1}}}}


def test_an_empty_file_is_an_empty_store(tmp_path):
    path = tmp_path / 'pets.json'
    path.write_text('')
    with StubStore(path) as store:
        assert len(store) == 0


@pytest.mark.parametrize('content, problem', [
    pytest.param(b'{"pets": {"1": ', 'not a readable JSON file', id='truncated JSON'),
    pytest.param(b'\xff\xfe\x00', 'not a readable JSON file', id='not UTF-8'),
    pytest.param(b'{"pets": {"1": {"name": "a", "categoryId": NaN}}}', 'not a readable JSON file',
                 id='NaN'),
    pytest.param(b'[1, 2, 3]', 'not a TinyDB file', id='an array'),
    pytest.param(b'{"pets": [1, 2]}', 'not a TinyDB file', id='table is not an object'),
    pytest.param(b'{"pets": {"one": {"name": "a", "categoryId": 1}}}', "the id 'one' in pets",
                 id='id not a number'),
    pytest.param(b'{"pets": {"0": {"name": "a", "categoryId": 1}}}', "the id '0' in pets",
                 id='id zero'),
    pytest.param(b'{"pets": {}, "_petstore": {"1": {"format": 2, "last_ids": {"pets": -1}}}}',
                 'its last ids, in _petstore, are not whole int64s', id='a last id below 0'),
    pytest.param(b'{"pets": {"1": {"name": "a"}}}', 'pet 1 is not a valid pet', id='not a pet'),
    pytest.param(b'{"pets": {"1": ["a", 1]}}', 'pet 1 is not a valid pet (a NewPet is a JSON object',
                 id='pet not an object'),
    pytest.param(b'{"pets": {"1": {"name": "a", "categoryId": 1}}, "pets": {}}',
                 "the key 'pets' appears twice", id='a table twice'),
    pytest.param(b'{"pets": {"1": {"name": "a", "categoryId": 1}, "1": {"name": "b", '
                 b'"categoryId": 1}}}', "the key '1' appears twice", id='a pet id twice'),
])
def test_a_bad_file_is_refused_and_left_untouched(tmp_path, content, problem):
    path = tmp_path / 'pets.json'
    path.write_bytes(content)
    with pytest.raises(DatabaseError) as caught:
        StubStore(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)
    assert path.read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == ['pets.json']


@pytest.mark.parametrize('log, problem', [
    pytest.param(b'not json\n', 'line 1 is not a logged change', id='not JSON'),
    pytest.param(b'{"insert": {"pets": {"1": {"name": "a", "categoryId": 1}}}}\n[1]\n',
                 'line 2 is not a logged change', id='not an object'),
    pytest.param(b'{"update": {}}\n', "unknown change 'update'", id='unknown change'),
    pytest.param(b'{"write": []}\n', 'its write is not an object of tables', id='write of an array'),
    pytest.param(b'{"insert": {"pets": [["2", {"name": "a", "categoryId": 1}]]}}\n',
                 'its insert is not an object of tables', id='insert of pairs'),
    pytest.param(b'{"insert": {"pets": {"2": {"name": "a", "categoryId": 1}, "2": {}}}}\n',
                 "the key '2' appears twice", id='a pet id twice'),
    pytest.param(b'{"insert": {"pets": {"1": {"name": ""}}}}\n', 'pet 1 is not a valid pet',
                 id='not a pet'),
    pytest.param(b'{"write": {"pets": {"3": {"name": "a", "categoryId": "1"}}}}\n',
                 'pet 3 is not a valid pet', id='a write of no pet'),
    pytest.param(b'{"remove": {"pets": {"1": null}}}\n{"put": {"pets": {"2": null}}}\n',
                 'line 2 is not a logged change (pet 2 is not a valid pet', id='a put of null'),
    pytest.param(b'{"remove": {"pets": {"x": null}}}\n',
                 "line 1 is not a logged change (the id 'x' in pets is not", id='remove of no id'),
])
def test_a_damaged_log_is_refused_and_both_files_left_untouched(tmp_path, log, problem):
    path, log_path = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    path.write_bytes(b'{"pets": {}}')
    log_path.write_bytes(log)
    with pytest.raises(DatabaseError) as caught:
        StubStore(path)
    assert str(log_path) in str(caught.value)
    assert problem in str(caught.value)
    assert (path.read_bytes(), log_path.read_bytes()) == (b'{"pets": {}}', log)


def test_a_log_without_its_database_is_refused(tmp_path):
    (tmp_path / 'pets.json.log').write_text(json.dumps({'insert': {'pets': {'1': REX}}}) + '\n')
    with pytest.raises(DatabaseError, match='the database .* is empty or missing'):
        StubStore(tmp_path / 'pets.json')
    assert [p.name for p in tmp_path.iterdir()] == ['pets.json.log']


def test_a_pet_rendered_before_a_reset_is_not_served_after_it(store):
    store.add(REX)
    assert json.loads(store.get_json(1)) == {'id': 1, **REX}
    assert json.loads(store.list_json(20)) == [{'id': 1, **REX}]
    store.reset()
    store.add(MYSTERY)
    assert json.loads(store.get_json(1)) == {'id': 1, **MYSTERY}
    assert json.loads(store.list_json(20)) == [{'id': 1, **MYSTERY}]


@pytest.mark.parametrize('path', [None, 'pets.json'], ids=['memory', 'file'])
def test_the_json_of_many_pets_matches_them_past_the_rendering_bound(tmp_path, path):
    store = StubStore(path and tmp_path / path, rendered_pets=3)
    pets = store.add_many([{'name': f'p{n}', 'categoryId': n} for n in range(10)])
    for _ in range(2):
        for pet in pets:
            assert json.loads(store.get_json(pet['id'])) == pet
        assert json.loads(store.list_json(5)) == pets[:5]
    assert store.get_json(11) is None
    store.close()


def test_a_link_to_the_database_is_the_same_database(tmp_path):
    path, link = tmp_path / 'pets.json', tmp_path / 'alias.json'
    with StubStore(path) as store:
        store.add(REX)
        link.symlink_to(path)
        with pytest.raises(DatabaseError, match='another stub is using this database'):
            StubStore(link)
    with StubStore(link) as through_the_link:
        assert through_the_link.add(MYSTERY)['id'] == 2
    assert link.is_symlink()
    assert json.loads(path.read_text())['pets'] == {'1': REX, '2': MYSTERY}


# -- promises at the edges ---------------------------------------------------------

def test_a_hard_link_to_the_database_is_the_same_database(tmp_path):
    path, link = tmp_path / 'pets.json', tmp_path / 'hard.json'
    with StubStore(path) as store:
        store.add(REX)
        os.link(path, link)
        with pytest.raises(DatabaseError, match='another stub is using this database'):
            StubStore(link)
        store.add(MYSTERY)  # the log grows; the lock stays on the file
        with pytest.raises(DatabaseError, match='another stub is using this database'):
            StubStore(link)


def test_a_hard_link_made_before_the_stub_started_stays_locked_after_a_fold(tmp_path):
    path, link = tmp_path / 'pets.json', tmp_path / 'hard.json'
    with StubStore(path) as store:
        store.add(REX)
    os.link(path, link)
    with StubStore(path, checkpoint_lines=1) as store:
        store.add(MYSTERY)
        store.add(MYSTERY)  # folded: pets.json is a new file, and hard.json names the old one
        assert not os.path.samefile(path, link)
        with pytest.raises(DatabaseError, match='another stub is using this database'):
            StubStore(link)
    with StubStore(link) as old:  # once the stub is gone: the copy the link kept
        assert len(old) == 1


def test_the_lock_moves_to_each_new_file_a_checkpoint_writes(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path, checkpoint_lines=1) as store:
        for _ in range(3):
            store.add(REX)
            with pytest.raises(DatabaseError, match='another stub'):
                StubStore(path)


def test_a_read_only_database_keeps_its_mode_when_the_log_is_folded_in(tmp_path):
    path = tmp_path / 'pets.json'
    path.write_text(json.dumps({'pets': {'1': REX}}))
    path.chmod(0o444)
    with StubStore(path) as store:
        store.add(MYSTERY)
    assert oct(path.stat().st_mode & 0o777) == oct(0o444)
    assert len(json.loads(path.read_text())['pets']) == 2


def test_ids_stay_within_int64_and_a_create_past_it_is_refused(tmp_path):
    path = tmp_path / 'pets.json'
    path.write_text(json.dumps({'pets': {str(stub.INT64_MAX): REX}}))
    with StubStore(path) as store:
        with pytest.raises(stub.ApiError) as caught:
            store.add(MYSTERY)
        assert (caught.value.status_code, caught.value.code) == (507, 'ids_exhausted')
        assert len(store) == 1
        assert fetched(store, stub.INT64_MAX) == {'id': stub.INT64_MAX, **REX}
    assert json.loads(path.read_text())['pets'] == {str(stub.INT64_MAX): REX}


def test_a_pet_id_past_int64_in_the_file_is_refused(tmp_path):
    path = tmp_path / 'pets.json'
    path.write_text(json.dumps({'pets': {str(stub.INT64_MAX + 1): REX}}))
    with pytest.raises(DatabaseError, match='is not a positive int64'):
        StubStore(path)


def test_an_emptied_database_with_a_log_is_refused_not_started_with_less(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path) as store:
        store.add_many([REX, REX, REX])
        store.add(MYSTERY)
        crash = crash_copy(tmp_path, tmp_path / 'crash')
    crash.write_bytes(b'')
    logged = crash.with_name('pets.json.log').read_bytes()
    with pytest.raises(DatabaseError, match='empty or missing, so pets were lost'):
        StubStore(crash)
    assert (crash.read_bytes(), crash.with_name('pets.json.log').read_bytes()) == (b'', logged)


def test_a_crash_right_after_creating_a_database_loses_nothing(tmp_path):
    """A new file is written at once, so that an empty file never goes with a log."""
    with StubStore(tmp_path / 'pets.json') as store:
        store.add(REX)
        with StubStore(crash_copy(tmp_path, tmp_path / 'crash')) as after_crash:
            assert listed(after_crash) == [{'id': 1, **REX}]


@pytest.mark.parametrize('file, log', [
    pytest.param(b'[' * 100_000, None, id='file'),
    pytest.param(b'{"pets": {}}', b'[' * 100_000 + b'\n', id='log'),
    pytest.param(b'{"pets": {"1": ' + b'[' * 100_000 + b'}}', None, id='a pet'),
])
def test_a_database_nested_too_deeply_is_refused_in_one_line(tmp_path, file, log):
    path = tmp_path / 'pets.json'
    path.write_bytes(file)
    if log is not None:
        path.with_name('pets.json.log').write_bytes(log)
    with pytest.raises(DatabaseError) as caught:
        StubStore(path)
    assert 'nested too deeply' in str(caught.value)
    assert '\n' not in str(caught.value)
    assert path.read_bytes() == file


@pytest.mark.parametrize('where', ['missing folder', 'read-only folder'])
def test_a_database_where_it_cannot_be_written_is_refused_in_one_line(tmp_path, where):
    folder = tmp_path / 'pets'
    if where == 'read-only folder':
        folder.mkdir()
        folder.chmod(0o555)
        if os.access(folder, os.W_OK):
            pytest.skip('this user may write to any folder (root); the CLI test covers it')
    with pytest.raises(DatabaseError) as caught:
        StubStore(folder / 'pets.json')
    assert 'cannot use this database' in str(caught.value)
    assert '--db :memory:' in str(caught.value)


@pytest.mark.parametrize('kind', ['pipe', 'folder', 'device'])
@pytest.mark.parametrize('which', ['database', 'log'])
def test_a_path_that_is_not_a_regular_file_is_refused_and_left_as_it_is(tmp_path, kind, which):
    path = tmp_path / 'pets.json'
    target = path if which == 'database' else tmp_path / 'pets.json.log'
    if kind == 'pipe':
        os.mkfifo(target)
    elif kind == 'folder':
        target.mkdir()
    else:
        try:
            os.mknod(target, 0o644 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own
        except PermissionError:
            pytest.skip('only root makes device nodes')
    before = os.stat(target).st_mode
    with pytest.raises(DatabaseError, match='not a regular file; .*--db :memory:'):
        StubStore(path)  # a pipe would block this open, were it opened
    assert os.stat(target).st_mode == before
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_log_that_cannot_be_made_leaves_no_database_behind(tmp_path):
    path = tmp_path / ('p' * (os.pathconf(tmp_path, 'PC_NAME_MAX') - 2))  # no room for .log
    with pytest.raises(DatabaseError, match='cannot use this database'):
        StubStore(path)
    assert list(tmp_path.iterdir()) == []


def test_the_file_is_a_tinydb_file_and_the_storage_a_tinydb_storage(tmp_path):
    path = tmp_path / 'pets.json'
    with StubStore(path) as store:
        store.add(REX)
    with TinyDB(path, storage=stub.LockedJSONStorage) as db:
        assert db.table('pets').get(doc_id=1) == REX
        db.table('pets').insert(MYSTERY)
        with pytest.raises(DatabaseError, match='another stub'):
            StubStore(path)
    with StubStore(path) as reopened:
        assert listed(reopened) == [{'id': 1, **REX}, {'id': 2, **MYSTERY}]


# -- the stub as a process: kill -9, a full disk ------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize('round_number', range(3))
def test_kill_9_loses_no_acknowledged_pet_and_leaves_a_valid_file(tmp_path, round_number):
    db = tmp_path / 'pets.json'
    server = StubProcess('--db', str(db), '--quiet')
    acknowledged, lock = [], threading.Lock()

    def client(number: int) -> None:
        connection = connect(server.url)
        try:
            for count in range(10_000):
                status, pet = call(connection, 'POST', '/v1/pets',
                                   {'name': f'k{number}-{count}', 'categoryId': number})
                assert status == 201
                with lock:
                    acknowledged.append(pet)
        except (OSError, http.client.HTTPException, ValueError):
            return  # the server died mid-request: that pet was never acknowledged
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    # Each round kills at another point: after 100, 200 or 300 acknowledged creates.
    while len(acknowledged) < 100 * (round_number + 1) and all(t.is_alive() for t in threads):
        time.sleep(0.001)
    assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    for thread in threads:
        thread.join()

    assert acknowledged, 'no create finished before the kill'
    json.loads(db.read_text())  # the file is whole; the pets since its last write are in the log
    with stub.StubStore(db) as reopened:
        for pet in acknowledged:
            assert fetched(reopened, pet['id']) == pet
        assert len(reopened) >= len(acknowledged)


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs, and a way to fill it and to free it."""
    folder = tmp_path / 'disk'
    folder.mkdir()
    mounted = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=512k', 'tmpfs', str(folder)],
                             capture_output=True)
    if mounted.returncode:
        pytest.skip('mounting a small tmpfs needs root, or a machine that allows it')
    yield SmallDisk(folder)
    subprocess.run(['umount', '-l', str(folder)], check=True)


class SmallDisk:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.filler = folder / 'filler'

    def fill(self) -> None:
        with open(self.filler, 'ab', buffering=0) as stream, contextlib.suppress(OSError):
            while True:
                stream.write(b'\0' * 4096)

    def free(self) -> None:
        self.filler.unlink()


def create(port: int, name: str) -> tuple[int, dict]:
    connection = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    connection.request('POST', '/v1/pets', json.dumps({'name': name, 'categoryId': 1}),
                       JSON_HEADERS)
    response = connection.getresponse()
    result = response.status, json.loads(response.read())
    connection.close()
    return result


def names(port: int) -> list[str]:
    connection = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    connection.request('GET', '/v1/pets?limit=100', headers=AUTH)
    pets = json.loads(connection.getresponse().read())
    connection.close()
    return [pet['name'] for pet in pets]


@pytest.mark.slow
def test_a_full_disk_stores_nothing_shows_nothing_and_recovers_without_a_restart(small_disk):
    server = StubProcess('--db', str(small_disk.folder / 'pets.json'), '--quiet')
    port = port_of(server.url)
    small_disk.fill()
    status, error = create(port, 'GHOST')
    assert (status, error.get('code')) == (500, 'storage_error'), error
    assert 'No space left on device' in error['message']
    assert names(port) == []
    small_disk.free()
    assert create(port, 'Rex') == (201, {'id': 1, 'name': 'Rex', 'categoryId': 1})
    assert names(port) == ['Rex']
    server.kill()
    restarted = StubProcess('--db', str(small_disk.folder / 'pets.json'), '--quiet')
    port = port_of(restarted.url)
    assert names(port) == ['Rex']
    assert create(port, 'Max')[1]['id'] == 2
    assert restarted.stop(signal.SIGTERM) == 0


@pytest.mark.slow
def test_a_restart_on_a_full_disk_is_refused_in_one_line_and_loses_nothing(small_disk):
    path = small_disk.folder / 'pets.json'
    server = StubProcess('--db', str(path), '--quiet')
    port = port_of(server.url)
    assert [create(port, name)[0] for name in ('Rex', 'Bella')] == [201, 201]
    server.kill()  # the log holds both; the next start must fold it in
    small_disk.fill()
    refused = subprocess.run([sys.executable, str(MODULE), '--db', str(path), '--port', '0'],
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode == 1
    assert refused.stderr.count('\n') == 1
    assert 'No space left on device' in refused.stderr
    small_disk.free()
    restarted = StubProcess('--db', str(path), '--quiet')
    assert names(port_of(restarted.url)) == ['Rex', 'Bella']
    assert restarted.stop(signal.SIGTERM) == 0


def test_fixtures_go_into_no_store_a_create_still_to_be_written_went_into_first(tmp_path):
    with StubStore(tmp_path / 'pets.json') as store:
        table, outcomes = store._table, []

        def load_fixtures():
            try:
                stub.add_fixtures(store, stub.read_fixtures())
            except stub.ApiError as error:
                outcomes.append(error.code)
        with table._writer:  # held, so that the create waits in the queue, unwritten
            create = threading.Thread(target=store.add, args=({'name': 'Rex', 'categoryId': 1},))
            create.start()
            wait_until(lambda: len(table._batch) == 1)
            fixtures = threading.Thread(target=load_fixtures)
            fixtures.start()
            wait_until(lambda: len(table._batch) == 2)
        create.join(10)
        fixtures.join(10)
        assert outcomes == ['store_not_empty']
        assert listed(store) == [{'id': 1, 'name': 'Rex', 'categoryId': 1}]


def test_fixtures_go_into_an_empty_store_whatever_its_kind(store):
    assert len(stub.add_fixtures(store, stub.read_fixtures())) == len(store) > 0
    with pytest.raises(stub.ApiError, match=f'the store already holds {len(store)} pets'):
        stub.add_fixtures(store, stub.read_fixtures())
