"""The pet store over both storages, and the crash-safe JSON file and its log."""

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

import petstore_stub as stub
from petstore_stub import DatabaseError, PetStore
from tinydb import TinyDB

REX = {'name': 'Rex', 'categoryId': 1, 'status': 'available'}
MYSTERY = {'name': 'Mystery', 'categoryId': 2}


def test_add_returns_the_pet_with_its_new_id(store):
    assert store.add(REX) == {'id': 1, **REX}
    assert store.add(MYSTERY) == {'id': 2, **MYSTERY}
    assert len(store) == 2


def test_get_finds_a_pet_by_id_and_nothing_else(store):
    store.add(REX)
    assert store.get(1) == {'id': 1, **REX}
    assert store.get(2) is None
    assert store.get(0) is None
    assert store.get(-1) is None


def test_list_filters_then_limits(store):
    store.add_many([{'name': f'p{n}', 'categoryId': 1, 'status': s}
                    for n, s in enumerate(['sold', 'available', 'sold', 'sold'])])
    assert [pet['id'] for pet in store.list(2, 'sold')] == [1, 3]
    assert [pet['id'] for pet in store.list(20)] == [1, 2, 3, 4]


def test_reset_empties_the_store_and_restarts_ids(store):
    store.add(REX)
    store.reset()
    assert store.list(20) == []
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
    assert [pet['id'] for pet in store.list(100)] == list(range(1, 101))
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
    with PetStore(path):
        assert json.loads(path.read_text()) == {'pets': {}}


def test_every_add_is_on_disk_when_it_returns(tmp_path):
    folder = tmp_path / 'live'
    folder.mkdir()
    with PetStore(folder / 'pets.json') as store:
        store.add(REX)
        with PetStore(crash_copy(folder, tmp_path / 'crash1')) as after_crash:
            assert after_crash.list(20) == [{'id': 1, **REX}]
        store.add(MYSTERY)
        with PetStore(crash_copy(folder, tmp_path / 'crash2')) as after_crash:
            assert after_crash.list(20) == [{'id': 1, **REX}, {'id': 2, **MYSTERY}]


def test_an_add_appends_one_line_to_a_synchronous_log_and_leaves_the_file_alone(tmp_path):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    with PetStore(path) as store:
        file_before = path.read_bytes()
        store.add(REX)
        assert path.read_bytes() == file_before
        assert log.read_text() == json.dumps({'insert': {'pets': {'1': REX}}}) + '\n'
        assert open_flags(log) & os.O_DSYNC == os.O_DSYNC


def open_flags(path):
    """The flags this process opened ``path`` with (Linux)."""
    for fd in os.listdir('/proc/self/fd'):
        if os.path.realpath(f'/proc/self/fd/{fd}') == str(path):
            fdinfo = Path(f'/proc/self/fdinfo/{fd}').read_text()
            fdinfo = dict(line.split(':', 1) for line in fdinfo.splitlines())
            return int(fdinfo['flags'], 8)
    raise AssertionError(f'{path} is not open')


def test_one_write_serves_the_adds_that_wait_for_it(tmp_path, monkeypatch):
    writes = []
    real_append = stub.append_durably

    def slow_disk(log, data, size):
        writes.append(data.count(b'\n'))
        time.sleep(0.05)
        real_append(log, data, size)

    with PetStore(tmp_path / 'pets.json') as store:
        monkeypatch.setattr(stub, 'append_durably', slow_disk)
        threads = [threading.Thread(target=store.add, args=(REX,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(store) == 8
    assert sum(writes) == 8
    assert len(writes) < 8  # the adds that came during a write shared the next one


def test_close_folds_the_log_into_a_plain_tinydb_file(tmp_path):
    path = tmp_path / 'pets.json'
    with PetStore(path) as store:
        store.add_many([REX, MYSTERY])
    assert [p.name for p in tmp_path.iterdir()] == ['pets.json']
    with TinyDB(path) as db:
        assert db.table('pets').get(doc_id=2) == MYSTERY
        assert len(db.table('pets')) == 2


def test_a_long_log_is_folded_into_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(stub, 'CHECKPOINT_LINES', 3)
    path = tmp_path / 'pets.json'
    with PetStore(path) as store:
        for _ in range(4):
            store.add(REX)
        # Three lines were logged; the fourth add wrote the file and emptied the log.
        assert len(json.loads(path.read_text())['pets']) == 4
        assert (tmp_path / 'pets.json.log').read_bytes() == b''
        store.add(MYSTERY)
        with PetStore(crash_copy(tmp_path, tmp_path / 'crash')) as after_crash:
            assert len(after_crash) == 5


def test_a_log_replayed_over_a_file_that_holds_it_changes_nothing(tmp_path, monkeypatch):
    """A crash between writing the file and emptying the log."""
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    with PetStore(path) as store:
        store.add(REX)
        store.reset()
        store.add_many([MYSTERY, REX])
        old_log = log.read_bytes()
    log.write_bytes(old_log)  # close wrote the file; put the log back as if it had not been emptied
    with PetStore(path) as reopened:
        assert reopened.list(20) == [{'id': 1, **MYSTERY}, {'id': 2, **REX}]


def test_a_reset_is_durable(tmp_path):
    with PetStore(tmp_path / 'pets.json') as store:
        store.add_many([REX, REX])
        store.reset()
        store.add(MYSTERY)
        copy = crash_copy(tmp_path, tmp_path / 'crash')
    with PetStore(copy) as after_crash:
        assert after_crash.list(20) == [{'id': 1, **MYSTERY}]


def test_a_line_cut_short_by_a_crash_is_left_out(tmp_path):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    path.write_text('{"pets": {}}')
    log.write_text(json.dumps({'insert': {'pets': {'1': REX}}}) + '\n{"insert": {"pets": {"2"')
    with PetStore(path) as store:
        assert store.list(20) == [{'id': 1, **REX}]
        assert store.add(MYSTERY)['id'] == 2
    assert json.loads(path.read_text())['pets'] == {'1': REX, '2': MYSTERY}


def test_a_failed_write_is_a_500_and_is_tried_again_with_the_next_one(tmp_path, monkeypatch):
    path, log = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    with PetStore(path) as store:
        store.add(REX)
        file_before, log_before = path.read_bytes(), log.read_bytes()
        real_append = stub.append_durably

        def full_disk(log, data, size):
            raise OSError(28, 'No space left on device')

        monkeypatch.setattr(stub, 'append_durably', full_disk)
        with pytest.raises(stub.ApiError) as caught:
            store.add(MYSTERY)
        assert (caught.value.status_code, caught.value.code) == (500, 'storage_error')
        assert 'No space left on device' in caught.value.message
        assert (path.read_bytes(), log.read_bytes()) == (file_before, log_before)
        monkeypatch.setattr(stub, 'append_durably', real_append)
        store.add(REX)
        with PetStore(crash_copy(tmp_path, tmp_path / 'crash')) as after_crash:
            assert [pet['name'] for pet in after_crash.list(20)] == ['Rex', 'Mystery', 'Rex']


class HalfFullDisk:
    """A log file on a disk with room for ``room`` more bytes."""

    def __init__(self, stream, room):
        self.stream, self.room = stream, room

    def write(self, data):
        if not self.room:
            raise OSError(28, 'No space left on device')
        written = self.stream.write(bytes(data[:self.room]))
        self.room -= written
        return written

    def truncate(self, size):
        return self.stream.truncate(size)

    def fileno(self):
        return self.stream.fileno()


def test_a_write_cut_short_is_cut_off_the_log(tmp_path):
    path = tmp_path / 'log'
    path.write_bytes(b'line 1\n')
    with open(path, 'ab', buffering=0) as stream:
        with pytest.raises(OSError):
            stub.append_durably(HalfFullDisk(stream, 4), b'line 2\n', 7)
    assert path.read_bytes() == b'line 1\n'


def test_ids_continue_after_a_restart(tmp_path):
    path = tmp_path / 'pets.json'
    with PetStore(path) as store:
        store.add_many([REX, MYSTERY])
    with PetStore(path) as reopened:
        assert reopened.list(20) == [{'id': 1, **REX}, {'id': 2, **MYSTERY}]
        assert reopened.add(REX)['id'] == 3


def test_the_file_is_read_once_at_start(tmp_path):
    path = tmp_path / 'pets.json'
    with PetStore(path) as store:
        store.add(REX)
        path.write_text('garbage that a re-read would choke on')
        assert store.get(1) == {'id': 1, **REX}
        assert store.list(20) == [{'id': 1, **REX}]
        path.write_text('{}')


def test_a_second_store_on_the_same_file_is_refused_until_the_first_closes(tmp_path):
    path = tmp_path / 'pets.json'
    with PetStore(path):
        with pytest.raises(DatabaseError, match='another stub is using this database'):
            PetStore(path)
    with PetStore(path):
        pass


def test_a_tinydb_file_with_other_tables_keeps_them(tmp_path):
    path = tmp_path / 'pets.json'
    path.write_text(json.dumps({'_default': {'1': {'x': 1}}, 'pets': {'7': REX}}))
    with PetStore(path) as store:
        assert store.add(MYSTERY)['id'] == 8
        store.reset()
    assert json.loads(path.read_text()) == {'_default': {'1': {'x': 1}}, 'pets': {}}


def test_an_empty_file_is_an_empty_store(tmp_path):
    path = tmp_path / 'pets.json'
    path.write_text('')
    with PetStore(path) as store:
        assert len(store) == 0


@pytest.mark.parametrize('content, problem', [
    pytest.param(b'{"pets": {"1": ', 'not a readable JSON file', id='truncated JSON'),
    pytest.param(b'\xff\xfe\x00', 'not a readable JSON file', id='not UTF-8'),
    pytest.param(b'{"pets": {"1": {"name": "a", "categoryId": NaN}}}', 'not a readable JSON file',
                 id='NaN'),
    pytest.param(b'[1, 2, 3]', 'not a TinyDB file', id='an array'),
    pytest.param(b'{"pets": [1, 2]}', 'not a TinyDB file', id='table is not an object'),
    pytest.param(b'{"pets": {"one": {"name": "a", "categoryId": 1}}}', "pet id 'one'",
                 id='id not a number'),
    pytest.param(b'{"pets": {"0": {"name": "a", "categoryId": 1}}}', "pet id '0'", id='id zero'),
    pytest.param(b'{"pets": {"1": {"name": "a"}}}', 'pet 1 is not a valid pet', id='not a pet'),
])
def test_a_bad_file_is_refused_and_left_untouched(tmp_path, content, problem):
    path = tmp_path / 'pets.json'
    path.write_bytes(content)
    with pytest.raises(DatabaseError) as caught:
        PetStore(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)
    assert path.read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == ['pets.json']


@pytest.mark.parametrize('log, problem', [
    pytest.param(b'not json\n', 'line 1 is not a logged change', id='not JSON'),
    pytest.param(b'{"insert": {"pets": {"1": {"name": "a", "categoryId": 1}}}}\n[1]\n',
                 'line 2 is not a logged change', id='not an object'),
    pytest.param(b'{"update": {}}\n', "unknown change 'update'", id='unknown change'),
    pytest.param(b'{"insert": {"pets": {"1": {"name": ""}}}}\n', 'pet 1 is not a valid pet',
                 id='not a pet'),
])
def test_a_damaged_log_is_refused_and_both_files_left_untouched(tmp_path, log, problem):
    path, log_path = tmp_path / 'pets.json', tmp_path / 'pets.json.log'
    path.write_bytes(b'{"pets": {}}')
    log_path.write_bytes(log)
    with pytest.raises(DatabaseError) as caught:
        PetStore(path)
    assert str(log_path) in str(caught.value)
    assert problem in str(caught.value)
    assert (path.read_bytes(), log_path.read_bytes()) == (b'{"pets": {}}', log)


def test_a_log_without_its_database_is_refused(tmp_path):
    (tmp_path / 'pets.json.log').write_text(json.dumps({'insert': {'pets': {'1': REX}}}) + '\n')
    with pytest.raises(DatabaseError, match='a log without its database'):
        PetStore(tmp_path / 'pets.json')
    assert [p.name for p in tmp_path.iterdir()] == ['pets.json.log']


def test_a_pet_rendered_before_a_reset_is_not_served_after_it(store):
    store.add(REX)
    assert json.loads(store.get_json(1)) == {'id': 1, **REX}
    assert json.loads(store.list_json(20)) == [{'id': 1, **REX}]
    store.reset()
    store.add(MYSTERY)
    assert json.loads(store.get_json(1)) == {'id': 1, **MYSTERY}
    assert json.loads(store.list_json(20)) == [{'id': 1, **MYSTERY}]


def test_the_json_of_many_pets_matches_them_past_the_rendering_bound(store, monkeypatch):
    monkeypatch.setattr(stub, 'RENDERED_PETS', 3)
    pets = store.add_many([{'name': f'p{n}', 'categoryId': n} for n in range(10)])
    for _ in range(2):
        for pet in pets:
            assert json.loads(store.get_json(pet['id'])) == pet
        assert json.loads(store.list_json(5)) == pets[:5]
    assert store.get_json(11) is None


def test_a_link_to_the_database_is_the_same_database(tmp_path):
    path, link = tmp_path / 'pets.json', tmp_path / 'alias.json'
    with PetStore(path) as store:
        store.add(REX)
        link.symlink_to(path)
        with pytest.raises(DatabaseError, match='another stub is using this database'):
            PetStore(link)
    with PetStore(link) as through_the_link:
        assert through_the_link.add(MYSTERY)['id'] == 2
    assert link.is_symlink()
    assert json.loads(path.read_text())['pets'] == {'1': REX, '2': MYSTERY}
