"""The pet store over both storages, and the crash-safe JSON file."""

import json
import threading

import pytest

import petstore_stub as stub
from petstore_stub import DatabaseError, PetStore

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


# -- the file --------------------------------------------------------------------

def test_a_missing_file_is_created_empty(tmp_path):
    path = tmp_path / 'new.json'
    PetStore(path)
    assert json.loads(path.read_text()) == {'pets': {}}


def test_every_add_is_on_disk_when_it_returns(tmp_path):
    path = tmp_path / 'pets.json'
    store = PetStore(path)
    store.add(REX)
    assert json.loads(path.read_text()) == {'pets': {'1': REX}}
    store.add(MYSTERY)
    assert json.loads(path.read_text())['pets']['2'] == MYSTERY


def test_the_file_is_replaced_through_an_fsynced_temporary_file(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = stub.os.fsync, stub.os.replace
    monkeypatch.setattr(stub.os, 'fsync', lambda fd: calls.append('fsync') or real_fsync(fd))
    monkeypatch.setattr(stub.os, 'replace',
                        lambda src, dst: calls.append(('replace', src.name)) or real_replace(src, dst))
    store = PetStore(tmp_path / 'pets.json')
    calls.clear()
    store.add(REX)
    assert calls == ['fsync', ('replace', '.pets.json.tmp'), 'fsync']
    assert [p.name for p in tmp_path.iterdir()] == ['pets.json']


def test_a_failed_write_is_a_500_and_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / 'pets.json'
    store = PetStore(path)
    store.add(REX)
    before = path.read_bytes()

    def full_disk(fd):
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(stub.os, 'fsync', full_disk)
    with pytest.raises(stub.ApiError) as caught:
        store.add(MYSTERY)
    assert (caught.value.status_code, caught.value.code) == (500, 'storage_error')
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ['pets.json']


def test_ids_continue_after_a_restart(tmp_path):
    path = tmp_path / 'pets.json'
    PetStore(path).add_many([REX, MYSTERY])
    reopened = PetStore(path)
    assert reopened.list(20) == [{'id': 1, **REX}, {'id': 2, **MYSTERY}]
    assert reopened.add(REX)['id'] == 3


def test_the_file_is_read_once_at_start(tmp_path):
    path = tmp_path / 'pets.json'
    store = PetStore(path)
    store.add(REX)
    path.write_text('garbage that a re-read would choke on')
    assert store.get(1) == {'id': 1, **REX}
    assert store.list(20) == [{'id': 1, **REX}]


def test_a_tinydb_file_with_other_tables_keeps_them(tmp_path):
    path = tmp_path / 'pets.json'
    path.write_text(json.dumps({'_default': {'1': {'x': 1}}, 'pets': {'7': REX}}))
    store = PetStore(path)
    assert store.add(MYSTERY)['id'] == 8
    assert json.loads(path.read_text())['_default'] == {'1': {'x': 1}}


def test_an_empty_file_is_an_empty_store(tmp_path):
    path = tmp_path / 'pets.json'
    path.write_text('')
    assert len(PetStore(path)) == 0


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
