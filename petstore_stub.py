"""A local stub server for the Pet Store API (version 1.0.0), in one file.

It answers the three operations of the Pet Store service, checks the bearer
key on every call, validates strictly, and keeps its pets in a TinyDB JSON
file that survives a crash::

    python petstore_stub.py --fixtures          # demo data, http://127.0.0.1:8080/v1
    curl -H 'Authorization: Bearer petstore-demo-key' http://127.0.0.1:8080/v1/pets

Operations, under the base path ``/v1`` (``/staging/v1`` with ``--staging``):

    GET  /pets            listPets   ?limit=1..100 (default 20) &status=available|pending|sold
    POST /pets            createPet  {"name": str, "categoryId": int64, "status"?: str}
    GET  /pets/{petId}    getPet     deprecated, sunset Thu, 05 Dec 2030
    GET  /store/orders    named by the spec but not shown there: 501

Every error is the spec's Error body ``{"code", "message", "status"}``. ``GET /``
(an index) and ``GET <base path>/openapi.json`` (OpenAPI 3.0) need no key.

Flags (``python petstore_stub.py --help``): ``--host``, ``--port`` (or
``PORT``), ``--api-key`` (or ``PETSTORE_API_KEYS``), ``--db PATH|:memory:``,
``--fixtures [FILE]`` (the demo animals are in ``data/pets.json``),
``--staging``, ``--cors``, ``--trust-proxy``, ``--admin``, ``--quiet``.

In tests (the package registers the pytest fixtures ``petstore_server`` and
``petstore_app``)::

    with serve() as server:                 # a free loopback port, in memory
        server.url, server.headers          # 'http://127.0.0.1:54321/v1', {'Authorization': ...}
        server.add_pet('Rex', 1)
        server.fail_next(503)               # or 'drop'; times=, route='createPet'
        server.requests                     # the journal: what the client sent
        server.reset()

The file reads in the order a request flows:

1. constants
2. ``ApiError``: the one exception, and the Error body it renders
3. storage: TinyDB storages in memory and in a file with its log, and ``PetStore``
4. validation: pure functions from raw input to clean values
5. auth: the bearer key
6. the app: ``create_app()``, the routes, the journal, faults and admin endpoints
7. the OpenAPI description
8. serving: ``StubServer`` (waitress in a thread) and ``serve()``
9. the command line: ``main()``
10. the pytest fixtures
"""

from __future__ import annotations

import argparse
import collections
import functools
import hmac
import http
import io
import ipaddress
import itertools
import json
import logging
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Mapping, Sequence

import bottle
import waitress
from waitress import wasyncore
from tinydb import TinyDB
from tinydb.storages import MemoryStorage, Storage

__all__ = [
    'ApiError', 'DatabaseError', 'DurableJSONStorage', 'MemoryTables', 'PetStore', 'ServerError',
    'StubApp', 'StubServer', 'create_app', 'main', 'parse_limit', 'parse_new_pet', 'parse_pet_id',
    'parse_status', 'read_fixtures', 'serve',
]

__version__ = '1.0.0'

# -- Constants ----------------------------------------------------------------

API_VERSION = '1.0.0'
BASE_PATH = '/v1'
STAGING_BASE_PATH = '/staging/v1'

PET_STATUSES = ('available', 'pending', 'sold')
NEW_PET_FIELDS = ('name', 'categoryId', 'status')
LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT = 1, 100, 20
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
MAX_BODY_BYTES = 1024 * 1024

#: Published in the README, so it is only ever served on loopback.
DEMO_API_KEY = 'petstore-demo-key'
#: RFC 6750 b64token: the characters a bearer token may hold.
TOKEN_PATTERN = re.compile(r'[A-Za-z0-9\-._~+/]+=*')
REALM = 'petstore'

#: getPet is deprecated (RFC 9745) and goes away on 5 December 2030 (RFC 8594).
#: The spec gives no deprecation date; 1 January 2026 stands in for it.
DEPRECATED_SINCE = 1767225600
SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT'

#: The operations, by the spec's operationId: what fail_next(route=...) names.
OPERATIONS = ('listPets', 'createPet', 'getPet', 'listOrders')
ADMIN_PREFIX = '/__admin/'
#: What a browser's cross-origin request may send and read (``--cors``).
CORS_ALLOW_HEADERS = 'Authorization, Content-Type'
CORS_EXPOSE_HEADERS = 'Location, Deprecation, Sunset, Link, WWW-Authenticate'
CORS_MAX_AGE = '600'
JOURNAL_SIZE = 1000

DEFAULT_DB = 'petstore.json'
MEMORY_DB = ':memory:'
PETS_TABLE = 'pets'
DEFAULT_PORT = 8080
#: The log is folded into the file once it has this many lines, or as many as the file has pets.
CHECKPOINT_LINES = 1000
#: How many pets the store keeps rendered as JSON text (about 150 bytes each).
RENDERED_PETS = 10_000
#: Synchronous writes (Linux, macOS): one system call puts a log line on disk.
O_DSYNC = getattr(os, 'O_DSYNC', 0)
#: waitress's worker threads. Measured under 16 keep-alive clients, 4 (its default) served
#: half as many requests as 8 or 16, and more threads waiting on one log write share it.
SERVER_THREADS = 16
#: waitress buffers a body this big before the app sees it (and can answer 413 in JSON).
SERVER_MAX_BODY_BYTES = 64 * 1024 * 1024


def demo_fixtures_path() -> Path:
    """The demo animals: ``data/`` beside this file, or where the wheel put it."""
    here = Path(__file__).resolve().parent
    for folder in (here / 'data', here / 'petstore_stub_data'):
        if (folder / 'pets.json').is_file():
            return folder / 'pets.json'
    raise FileNotFoundError(f'the demo data pets.json is not beside {here}')


# -- Errors -------------------------------------------------------------------

def error_json(status: int, code: str, message: str) -> str:
    """The spec's Error body."""
    return to_json({'code': code, 'message': message, 'status': status})


def to_json(value: Any) -> str:
    # A trailing newline keeps curl's output off the shell prompt.
    return json.dumps(value, ensure_ascii=False) + '\n'


class ApiError(bottle.HTTPResponse):
    """Raised anywhere to answer with the spec's Error body.

    It is a bottle response, so bottle stops the request where it is raised
    (in a hook, a route or the store) and sends it as it is.
    """

    def __init__(self, status: int, code: str, message: str,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(error_json(status, code, message), status, dict(headers or {}))
        self.content_type = 'application/json'
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f'{self.status_code} {self.code}: {self.message}'


class DatabaseError(Exception):
    """The database file cannot be used; the stub refuses to start."""


# -- Storage ------------------------------------------------------------------
#
# The pets live in memory, in TinyDB's layout: ``{"pets": {"1": {...}, ...}}``.
# On disk that layout is the database file, and beside it, in ``<file>.log``,
# are the changes made since the file was last written, one JSON line each:
#
#     {"insert": {"pets": {"14": {"name": "Rex", "categoryId": 1}}}}
#     {"write": {"pets": {}}}                      (TinyDB replaced the tables)
#
# A change is on disk once its line is appended to the log, which is opened for
# synchronous writes (O_DSYNC): a create costs one short write, however many
# pets there are. Once the log is as long as the file, and at start and close,
# the log is folded into the file (a checkpoint): the file is replaced
# crash-safely, and only then is the log emptied. Replaying a log over a file
# that already holds its changes gives the same tables, so a crash between
# those two steps loses nothing.

def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash leaves the old or the new file.

    The text goes to a temporary file in the same folder, is flushed and
    fsynced, then renamed over the target; the folder is fsynced so that the
    rename itself is on disk.
    """
    temporary = path.with_name(f'.{path.name}.tmp')
    try:
        with open(temporary, 'w', encoding='utf-8') as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    """Put a folder's entries (a rename, a new file) on disk."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def lock_file(descriptor: int, path: Path) -> None:
    """Take an exclusive lock on an open file, so that one stub at a time uses ``path``."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks to take
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise DatabaseError(f'{path}: another stub is using this database') from None


def load_database(path: Path) -> dict[str, dict[str, dict]]:
    """Read and check a TinyDB file; raise DatabaseError naming what is wrong."""
    try:
        text = path.read_bytes().decode('utf-8')
        tables = json.loads(text, parse_constant=reject_constant) if text.strip() else {}
    except (OSError, ValueError) as error:
        raise DatabaseError(f'{path}: not a readable JSON file ({error})') from None
    return check_tables(path, tables)


def check_tables(path: Path, tables: Any) -> dict[str, dict[str, dict]]:
    """The tables, with every pet checked and the pets in id order; or DatabaseError."""
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise DatabaseError(f'{path}: not a TinyDB file (expected an object of tables)')
    pets = tables.setdefault(PETS_TABLE, {})
    for doc_id, document in pets.items():
        if not re.fullmatch(r'[1-9][0-9]*', doc_id):
            raise DatabaseError(f'{path}: pet id {doc_id!r} is not a positive integer')
        try:
            parse_new_pet(document)
        except ApiError as error:
            raise DatabaseError(f'{path}: pet {doc_id} is not a valid pet ({error.message})') from None
    tables[PETS_TABLE] = dict(sorted(pets.items(), key=lambda item: int(item[0])))
    return tables


def replay_log(path: Path, tables: dict[str, dict[str, dict]]) -> dict[str, dict[str, dict]]:
    """``tables`` with the changes logged in ``path`` applied; DatabaseError if it is damaged.

    A last line without its newline is a change cut short by a crash: its
    request was never answered, so it is left out.
    """
    try:
        lines = path.read_bytes().split(b'\n')[:-1]
    except OSError as error:
        raise DatabaseError(f'{path}: cannot read the log ({error.strerror})') from None
    for number, line in enumerate(lines, start=1):
        try:
            apply_change(tables, json.loads(line.decode('utf-8'), parse_constant=reject_constant))
        except (ValueError, TypeError, AttributeError) as error:
            raise DatabaseError(f'{path}: line {number} is not a logged change ({error})') from None
    return check_tables(path, tables)


def apply_change(tables: dict[str, dict[str, dict]], change: dict) -> None:
    """Apply one logged change, ``{"insert": {table: documents}}`` or ``{"write": tables}``."""
    (kind, value), = change.items()
    if kind == 'insert':
        for name, documents in value.items():
            tables.setdefault(name, {}).update(documents)
    elif kind == 'write':
        tables.clear()
        tables.update(value)
    else:
        raise ValueError(f'unknown change {kind!r}')


class MemoryTables(Storage):
    """A TinyDB storage in memory that can add documents without copying a table.

    (TinyDB's ``Table.insert`` rebuilds the whole table on every call.) Hold
    ``lock`` while reading or changing the tables.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self._tables: dict[str, dict[str, dict]] = {PETS_TABLE: {}}

    def read(self) -> dict[str, dict[str, dict]]:
        return self._tables

    def write(self, data: dict[str, dict[str, dict]]) -> None:
        self._tables = data

    def insert(self, table: str, documents: dict[str, dict]) -> None:
        self._tables.setdefault(table, {}).update(documents)

    def sync(self) -> None:
        """Return once every change made so far is on disk (in memory: at once)."""


class DurableJSONStorage(MemoryTables):
    """The tables in memory; every change on disk by the time ``sync()`` returns.

    ``path`` is a TinyDB file and ``path.log`` the changes made since it was
    written (see the top of this section). One write to the log serves every
    change waiting for it (group commit).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        super().__init__()
        self.path = Path(path)
        # The file itself, not a link to it: one log per file, and a rename that keeps the link.
        self._file = Path(os.path.realpath(path))
        self.log_path = self._file.with_name(f'{self._file.name}.log')
        self._log: IO[bytes] | None = self._open()
        self._pending: list[bytes] = []  #: changes made in memory, not yet in the log
        self._changes = 0  #: changes made so far
        self._synced = 0  #: of those, how many are on disk
        self._log_lines = 0
        self._log_size = 0  #: bytes
        self._file_documents = sum(map(len, self._tables.values()))  #: in the file
        self._turn = threading.Condition()  #: guards _writing, and signals its end
        self._writing = False  #: a thread is writing to disk

    def _open(self) -> IO[bytes]:
        """Read the file, fold in what an earlier run left in the log; return the log, empty."""
        log = self._open_locked_log()  # first, so that no other stub changes the file meanwhile
        try:
            logged = os.fstat(log.fileno()).st_size
            if self.path.exists():
                self._tables = load_database(self.path)
            elif logged:
                raise DatabaseError(f'{self.log_path}: a log without its database {self.path}; '
                                    'restore the database or remove the log')
            if logged or not self.path.exists():
                self._tables = replay_log(self.log_path, self._tables)
                self._write_file(to_json(self._tables))
                log.truncate(0)
                os.fsync(log.fileno())
            fsync_folder(self._file.parent)
        except BaseException:
            if not os.fstat(log.fileno()).st_size:
                self.log_path.unlink()  # an empty log holds nothing; leave the folder as it was
            log.close()
            raise
        return log

    def _open_locked_log(self) -> IO[bytes]:
        """The log, open for appending and locked; each write returns once it is on disk."""
        while True:
            log = open(self.log_path, 'ab', buffering=0, opener=open_synchronous)
            try:
                lock_file(log.fileno(), self.path)
                # A stub that was closing may have removed the file just before unlocking it.
                if self.log_path.exists() and os.path.samestat(os.fstat(log.fileno()),
                                                               os.stat(self.log_path)):
                    return log
            except BaseException:
                log.close()
                raise
            log.close()

    def write(self, data: dict[str, dict[str, dict]]) -> None:
        super().write(data)
        self._record({'write': data})

    def insert(self, table: str, documents: dict[str, dict]) -> None:
        super().insert(table, documents)
        self._record({'insert': {table: documents}})

    def _record(self, change: dict) -> None:
        self._pending.append(json.dumps(change, ensure_ascii=False).encode('utf-8') + b'\n')
        self._changes += 1

    def sync(self) -> None:
        """Return once every change made before the call is on disk.

        One thread at a time writes, taking every change pending; the others
        wait, and those whose change went with that write return (group commit).
        """
        wanted = self._changes
        while not self._wait_or_take_turn(wanted):
            try:
                # Once the log is as long as the file, folding it in costs each change O(1).
                if self._log_lines >= max(CHECKPOINT_LINES, self._file_documents):
                    self._checkpoint()
                else:
                    self._append_pending()
            finally:
                self._end_turn()

    def _wait_or_take_turn(self, wanted: int) -> bool:
        """True once change number ``wanted`` is on disk; False if this thread is to write it."""
        with self._turn:
            while self._synced < wanted:
                if not self._writing:
                    self._writing = True
                    return False
                self._turn.wait()
            return True

    def _end_turn(self) -> None:
        with self._turn:
            self._writing = False
            self._turn.notify_all()

    def _append_pending(self) -> None:
        with self.lock:
            lines, self._pending = self._pending, []
            changes = self._changes
        data = b''.join(lines)
        try:
            append_durably(self._log, data, self._log_size)
        except OSError as error:
            with self.lock:
                self._pending[:0] = lines  # the next sync tries them again
            raise storage_error(self.log_path, error) from None
        self._synced = changes
        self._log_lines += len(lines)
        self._log_size += len(data)

    def _checkpoint(self) -> None:
        """Write every table to the file, then empty the log (in the writing turn)."""
        with self.lock:
            # The documents never change once stored: copying the dicts is enough.
            tables = {name: dict(documents) for name, documents in self._tables.items()}
            taken, changes = len(self._pending), self._changes
        documents = sum(map(len, tables.values()))
        self._write_file(to_json(tables))
        try:
            self._log.truncate(0)
            os.fsync(self._log.fileno())
        except OSError as error:
            raise storage_error(self.log_path, error) from None
        with self.lock:
            del self._pending[:taken]  # in the file now
        self._synced = changes
        self._log_lines = self._log_size = 0
        self._file_documents = documents

    def close(self) -> None:
        """Fold the log into the file and remove it: the file alone holds every pet."""
        with self._turn:
            while self._writing:
                self._turn.wait()
            self._writing = True
        try:
            if self._log is not None:
                self._checkpoint()
                self.log_path.unlink()  # while still locked: no other stub is using it
                self._log.close()
                self._log = None
        finally:
            self._end_turn()

    def _write_file(self, text: str) -> None:
        try:
            write_atomically(self._file, text)
        except OSError as error:
            raise storage_error(self.path, error) from None


def open_synchronous(path: str, flags: int) -> int:
    """``open()``'s opener for a file whose writes return once they are on disk."""
    return os.open(path, flags | O_DSYNC, 0o644)


def append_durably(log: IO[bytes], data: bytes, size: int) -> None:
    """Append ``data`` to ``log`` (``size`` bytes long); return once it is on disk.

    Where the system has no O_DSYNC, an fsync follows the write. On failure
    the log is cut back to ``size``: no half line for the next append to follow.
    """
    try:
        view = memoryview(data)
        while view:
            view = view[log.write(view):]
        if not O_DSYNC:
            os.fsync(log.fileno())
    except OSError:
        try:
            log.truncate(size)
        except OSError:
            pass
        raise


def storage_error(path: Path, error: OSError) -> ApiError:
    return ApiError(500, 'storage_error', f'could not write {path}: {error.strerror}')


class PetStore:
    """The pets, in a TinyDB table, behind one lock.

    ``PetStore()`` keeps them in memory; ``PetStore(path)`` in a TinyDB JSON
    file (and its log) that holds every pet whose creation was acknowledged.
    A pet never changes once stored, so it is rendered as JSON only once.
    """

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        if path is None:
            self._db = TinyDB(storage=MemoryTables)
        else:
            self._db = TinyDB(path, storage=DurableJSONStorage)
        self._storage: MemoryTables = self._db.storage
        self._table = self._db.table(PETS_TABLE, cache_size=0)
        self._lock = self._storage.lock
        self._next_id = max(map(int, self._pets()), default=0) + 1
        self._rendered: dict[str, str] = {}  #: pet id -> the pet as JSON
        self.path = None if path is None else Path(path)

    def add(self, new_pet: Mapping[str, Any]) -> dict:
        """Store a validated NewPet; return the Pet once it is durable."""
        return self.add_many([new_pet])[0]

    def add_many(self, new_pets: Sequence[Mapping[str, Any]]) -> list[dict]:
        with self._lock:
            first, self._next_id = self._next_id, self._next_id + len(new_pets)
            documents = {str(first + n): dict(pet) for n, pet in enumerate(new_pets)}
            self._storage.insert(PETS_TABLE, documents)
        self._storage.sync()
        return [as_pet(int(pet_id), document) for pet_id, document in documents.items()]

    def get(self, pet_id: int) -> dict | None:
        with self._lock:
            document = self._pets().get(str(pet_id))  # a dictionary lookup, however many pets
        return None if document is None else as_pet(pet_id, document)

    def list(self, limit: int, status: str | None = None) -> list[dict]:
        """The first ``limit`` pets by id, of ``status`` if given."""
        with self._lock:
            return [as_pet(int(pet_id), document)
                    for pet_id, document in self._select(limit, status)]

    def list_json(self, limit: int, status: str | None = None) -> str:
        """``list()`` as the JSON array that listPets sends."""
        with self._lock:
            return f'[{", ".join(self._render(*item) for item in self._select(limit, status))}]'

    def get_json(self, pet_id: int) -> str | None:
        """``get()`` as the JSON object that getPet sends."""
        key = str(pet_id)
        with self._lock:
            document = self._pets().get(key)
            return None if document is None else self._render(key, document)

    def _select(self, limit: int, status: str | None) -> Iterator[tuple[str, dict]]:
        # The stored table itself, in id order; the scan stops at ``limit`` matches.
        documents: Iterable[tuple[str, dict]] = self._pets().items()
        if status is not None:
            documents = (item for item in documents if item[1].get('status') == status)
        return itertools.islice(documents, limit)

    def _render(self, pet_id: str, document: dict) -> str:
        text = self._rendered.get(pet_id)
        if text is None:
            if len(self._rendered) >= RENDERED_PETS:
                self._rendered.clear()  # a bound on memory, at the price of rendering again
            text = self._rendered[pet_id] = json.dumps(as_pet(int(pet_id), document),
                                                       ensure_ascii=False)
        return text

    def _pets(self) -> dict[str, dict]:
        return self._storage.read()[PETS_TABLE]

    def __len__(self) -> int:
        with self._lock:
            return len(self._table)

    def reset(self) -> None:
        """Remove every pet; ids start again at 1."""
        with self._lock:
            self._table.truncate()
            self._next_id = 1
            self._rendered.clear()
        self._storage.sync()

    def close(self) -> None:
        """Fold the log into the file and release both (a file store)."""
        self._db.close()

    def __enter__(self) -> PetStore:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def as_pet(pet_id: int, document: Mapping[str, Any]) -> dict:
    return {'id': pet_id, **document}


def read_fixtures(path: str | os.PathLike | bool | None = None) -> list[dict]:
    """The NewPets in a fixtures file (a JSON array); the demo animals for None or True."""
    path = Path(path) if path and path is not True else demo_fixtures_path()
    try:
        documents = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError) as error:
        raise DatabaseError(f'{path}: cannot read the fixtures ({error})') from None
    if not isinstance(documents, list):
        raise DatabaseError(f'{path}: fixtures must be a JSON array of NewPet objects')
    new_pets = []
    for number, document in enumerate(documents, start=1):
        try:
            if not isinstance(document, dict):
                raise bad_body('it is not a JSON object')
            new_pets.append(parse_new_pet(document))
        except ApiError as error:
            raise DatabaseError(f'{path}: animal {number} is not a NewPet: {error.message}') from None
    return new_pets


# -- Validation ---------------------------------------------------------------

def bad_parameter(message: str) -> ApiError:
    return ApiError(400, 'invalid_parameter', message)


def bad_body(message: str) -> ApiError:
    return ApiError(400, 'invalid_body', message)


def parse_limit(raw: str | None) -> int:
    """``limit`` as sent (or None) -> 1..100, default 20."""
    if raw is None:
        return LIMIT_DEFAULT
    if not re.fullmatch(r'[0-9]{1,4}', raw) or not LIMIT_MIN <= int(raw) <= LIMIT_MAX:
        raise bad_parameter(
            f'limit must be a whole number from {LIMIT_MIN} to {LIMIT_MAX}; got {raw[:40]!r}')
    return int(raw)


def parse_status(raw: str | None) -> str | None:
    """``status`` as sent (or None) -> one of PET_STATUSES, or None."""
    if raw is None or raw in PET_STATUSES:
        return raw
    raise bad_parameter(f'status must be one of {", ".join(PET_STATUSES)}; got {raw[:40]!r}')


def parse_list_query(query: Mapping[str, list[str]]) -> dict[str, Any]:
    """The query of listPets -> ``{'limit': int, 'status': str | None}``.

    Unknown and repeated parameters are refused: a client that sends
    ``limt`` or ``offset`` should learn it here, not in production.
    """
    unknown = sorted(set(query) - {'limit', 'status'})
    if unknown:
        raise bad_parameter(f'unknown query parameter {unknown[0]!r}; '
                            'listPets takes limit and status only')
    for name, values in query.items():
        if len(values) > 1:
            raise bad_parameter(f'{name} was given {len(values)} times; give it once')
    single = {name: values[0] for name, values in query.items()}
    return {'limit': parse_limit(single.get('limit')),
            'status': parse_status(single.get('status'))}


def parse_pet_id(raw: str) -> int:
    """``petId`` from the path -> an int64 (zero and negatives are valid, never found)."""
    if re.fullmatch(r'-?[0-9]{1,19}', raw):
        pet_id = int(raw)
        if INT64_MIN <= pet_id <= INT64_MAX:
            return pet_id
    raise bad_parameter(f'petId must be an int64 integer; got {raw[:40]!r}')


def check_content_type(content_type: str) -> None:
    """Only ``application/json`` (UTF-8, the only charset JSON has) is accepted."""
    media_type, *parameters = [part.strip().lower() for part in content_type.split(';')]
    charsets = [p.partition('=')[2].strip('"') for p in parameters if p.startswith('charset=')]
    if media_type != 'application/json' or any(c != 'utf-8' for c in charsets):
        shown = content_type or 'none'
        raise ApiError(415, 'unsupported_media_type',
                       f'send the body as Content-Type: application/json; got {shown[:60]!r}')


def reject_constant(name: str) -> None:
    raise ValueError(f'{name} is not a JSON value')


def reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    document = dict(pairs)
    if len(document) != len(pairs):
        seen = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f'the key {duplicate!r} appears twice')
    return document


def parse_json_object(body: bytes) -> dict:
    """The raw request body -> a JSON object, or 400."""
    if not body.strip():
        raise bad_body('the request body is empty; send a NewPet JSON object')
    try:
        value = json.loads(body.decode('utf-8'), parse_constant=reject_constant,
                           object_pairs_hook=reject_duplicate_keys)
    except UnicodeDecodeError:
        raise bad_body('the request body is not UTF-8') from None
    except ValueError as error:
        raise bad_body(f'the request body is not valid JSON: {error}') from None
    if not isinstance(value, dict):
        raise bad_body(f'the request body must be a JSON object, not {type(value).__name__}')
    return value


def parse_new_pet(document: Mapping[str, Any]) -> dict:
    """A decoded NewPet -> a clean copy with its fields in spec order, or 400."""
    unknown = [field for field in document if field not in NEW_PET_FIELDS]
    if unknown:
        raise bad_body(f'unknown field {unknown[0]!r}; a NewPet has name, categoryId and status')
    for field in ('name', 'categoryId'):
        if field not in document:
            raise bad_body(f'{field} is required')
    name, category_id = document['name'], document['categoryId']
    if not isinstance(name, str) or not name:
        raise bad_body(f'name must be a non-empty string; got {json.dumps(name)[:40]}')
    if not is_unicode(name):
        raise bad_body('name holds an unpaired surrogate; it must be valid Unicode')
    if type(category_id) is not int or not INT64_MIN <= category_id <= INT64_MAX:
        raise bad_body(f'categoryId must be an int64 integer; got {json.dumps(category_id)[:40]}')
    new_pet = {'name': name, 'categoryId': category_id}
    if 'status' in document:
        status = document['status']
        if status not in PET_STATUSES:
            raise bad_body(f'status must be one of {", ".join(PET_STATUSES)}; '
                           f'got {json.dumps(status)[:40]}')
        new_pet['status'] = status
    return new_pet


def parse_fault(document: Mapping[str, Any]) -> dict:
    """A fault for fail_next -> ``{'status', 'times', 'route'}``, or 400.

    ``status`` is an error status (400..599) or ``"drop"``; ``times`` a
    positive count (default 1); ``route`` an operationId or null for any.
    """
    unknown = [field for field in document if field not in ('status', 'times', 'route')]
    if unknown:
        raise bad_body(f'unknown field {unknown[0]!r}; a fault has status, times and route')
    status, times = document.get('status'), document.get('times', 1)
    route = document.get('route')
    if status != 'drop' and not is_error_status(status):
        raise bad_body(f'status must be an HTTP error status (400..599) or "drop"; got {status!r}')
    if type(times) is not int or times < 1:
        raise bad_body(f'times must be a positive whole number; got {times!r}')
    if route is not None and route not in OPERATIONS:
        raise bad_body(f'route must be one of {", ".join(OPERATIONS)}, or null; got {route!r}')
    return {'status': status, 'times': times, 'route': route}


def is_error_status(status: Any) -> bool:
    try:
        return type(status) is int and 400 <= http.HTTPStatus(status) <= 599
    except ValueError:
        return False


def is_unicode(text: str) -> bool:
    try:
        text.encode('utf-8')
    except UnicodeEncodeError:
        return False
    return True


# -- Auth ---------------------------------------------------------------------

def check_bearer(authorization: str | None, api_keys: Sequence[str]) -> None:
    """Raise 401 unless ``authorization`` is ``Bearer <one of api_keys>``.

    No credentials gets a bare challenge; a wrong key adds
    ``error="invalid_token"`` (RFC 6750, section 3).
    """
    scheme, _, token = (authorization or '').strip().partition(' ')
    token = token.strip()
    if scheme.lower() != 'bearer' or not token:
        raise ApiError(401, 'unauthorized',
                       'send the API key as Authorization: Bearer <key>',
                       {'WWW-Authenticate': f'Bearer realm="{REALM}"'})
    offered = token.encode('utf-8', 'surrogateescape')
    # Compare with every key, without stopping early, so timing tells nothing.
    matches = [hmac.compare_digest(offered, key.encode('utf-8')) for key in api_keys]
    if not any(matches):
        raise ApiError(401, 'invalid_token', 'the API key is not valid',
                       {'WWW-Authenticate': f'Bearer realm="{REALM}", error="invalid_token"'})


# -- The app ------------------------------------------------------------------

class StubApp(bottle.Bottle):
    """The Pet Store as a WSGI app: bottle's routing plus what a fixture server needs.

    Besides the store it holds the request journal, the faults queued by
    ``fail_next()``, the ``delay`` added to each response, and the errors
    raised inside it (for ``StubServer.check()``). Every response passes
    through ``wsgi()``, errors included, so the journal and the access log
    see the status that was really sent.
    """

    def __init__(self, store: PetStore, api_keys: Sequence[str], base_path: str, *,
                 admin: bool, cors: bool, journal_size: int, access_log: IO[str] | None) -> None:
        super().__init__()
        self.store = store
        self.api_keys = tuple(api_keys)
        self.base_path = base_path
        #: What a GET may fetch without a key: the index and the OpenAPI description.
        self.public_paths = ('/', f'{base_path}/openapi.json')
        self.admin = admin
        self.cors = cors
        self.access_log = access_log
        self.journal: collections.deque[dict] = collections.deque(maxlen=journal_size)
        self.faults: list[dict] = []
        self.delay = 0.0
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()  # guards the journal and the faults
        self._generation = 0  # counts clear(): a request older than the last one is stale

    # Bottle refuses to rebind an attribute (a guard for plugins); this app's state changes.
    __setattr__ = object.__setattr__

    # What a test does to the stub between requests.

    def clear(self) -> None:
        """Empty the store (ids restart at 1) and the journal; drop faults and delay.

        (Not ``reset``: that is bottle's, and clears its routes.)
        """
        with self._lock:
            self._generation += 1
            self.journal.clear()
            self.faults.clear()
        self.delay = 0.0
        self.store.reset()

    def add_pet(self, name: str, categoryId: int, status: str | None = None) -> dict:
        new_pet = {'name': name, 'categoryId': categoryId}
        if status is not None:
            new_pet['status'] = status
        return self.store.add(parse_new_pet(new_pet))

    def load_fixtures(self, path: str | os.PathLike | bool | None = None) -> list[dict]:
        """Add the demo animals (or those in ``path``); return them as Pets."""
        return self.store.add_many(read_fixtures(path))

    def fail_next(self, status: int | str, times: int = 1, route: str | None = None) -> None:
        """Answer the next ``times`` requests (to ``route``, an operationId, or any) with
        ``status`` and an Error body, after the key is checked; ``"drop"`` closes the
        connection instead of answering."""
        fault = parse_fault({'status': status, 'times': times, 'route': route})
        with self._lock:
            self.faults.append(fault)

    @property
    def requests(self) -> list[dict]:
        """The journal: the last requests to the API, oldest first (admin calls left out)."""
        with self._lock:
            return list(self.journal)

    # What happens on each request.

    def take_fault(self, operation: str) -> int | str | None:
        if not self.faults:
            return None
        with self._lock:
            for fault in self.faults:
                if fault['route'] in (None, operation):
                    fault['times'] -= 1
                    if not fault['times']:
                        self.faults.remove(fault)
                    return fault['status']
        return None

    def wsgi(self, environ: dict, start_response: Any) -> Any:
        started = time.perf_counter()
        is_admin = self.admin and environ.get('PATH_INFO', '').startswith(ADMIN_PREFIX)
        body = None if is_admin else buffer_body(environ)
        generation = self._generation
        if self.delay and not is_admin:
            time.sleep(self.delay)
        if generation != self._generation:
            # Cleared while this request waited: its client (and its test) are gone.
            return drop_connection(environ)
        if self.cors and environ['REQUEST_METHOD'] == 'OPTIONS':
            result, status = answer_preflight(start_response), 204
        else:
            result, status = self.respond(environ, start_response)
        if not is_admin and self.journal.maxlen:
            entry = journal_entry(environ, body, status)
            with self._lock:
                if generation == self._generation:
                    self.journal.append(entry)
        if self.access_log is not None:
            self.log_request(environ, status, time.perf_counter() - started)
        return result

    def respond(self, environ: dict, start_response: Any) -> tuple[Any, int | None]:
        """Bottle's response, and its status (None when the connection was dropped)."""
        sent: list[str] = []

        def recording_start_response(status: str, headers: list, exc_info: Any = None) -> Any:
            sent.append(status)
            if self.cors:  # on errors too, so that a browser can read a 401
                headers = [*headers, ('Access-Control-Allow-Origin', '*'),
                           ('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS)]
            return start_response(status, headers, exc_info)

        result = super().wsgi(environ, recording_start_response)
        if environ.get(DROP_CONNECTION):
            return drop_connection(environ), None
        return result, int(sent[-1][:3])

    def log_request(self, environ: dict, status: int | None, seconds: float) -> None:
        query = environ.get('QUERY_STRING')
        target = environ.get('PATH_INFO', '') + (f'?{query}' if query else '')
        shown = 'dropped' if status is None else status
        print(f'{environ["REQUEST_METHOD"]} {target} {shown} {seconds * 1000:.1f}ms',
              file=self.access_log, flush=True)


def create_app(store: PetStore | None = None, api_keys: Sequence[str] = (DEMO_API_KEY,),
               base_path: str = BASE_PATH, *, admin: bool = False, cors: bool = False,
               journal_size: int = JOURNAL_SIZE, access_log: IO[str] | None = None) -> StubApp:
    """Build the WSGI app over ``store`` (a fresh in-memory one by default).

    ``api_keys`` are the bearer keys it accepts; ``base_path`` is ``/v1`` or
    ``/staging/v1``; ``admin`` adds the ``/__admin/`` endpoints; ``cors``
    lets browser pages on any origin call it; the journal keeps the last
    ``journal_size`` requests; ``access_log`` gets one line per request.
    """
    if not api_keys:
        raise ValueError('give at least one API key')
    app = StubApp(store if store is not None else PetStore(), api_keys, base_path, admin=admin,
                  cors=cors, journal_size=journal_size, access_log=access_log)
    app.add_hook('before_request', before_request)
    app.default_error_handler = render_bottle_error
    app.route('/', 'GET', index, name='index')
    app.route(f'{base_path}/openapi.json', 'GET', openapi_json, name='openapi')
    app.route(f'{base_path}/pets', 'GET', with_faults(list_pets), name='listPets')
    app.route(f'{base_path}/pets', 'POST', with_faults(create_pet), name='createPet')
    app.route(f'{base_path}/pets/<pet_id>', 'GET', with_faults(get_pet), name='getPet')
    app.route(f'{base_path}/store/orders', 'GET', with_faults(list_orders), name='listOrders')
    if admin:
        app.route(f'{ADMIN_PREFIX}reset', 'POST', admin_reset, name='admin.reset')
        app.route(f'{ADMIN_PREFIX}requests', 'GET', admin_requests, name='admin.requests')
        app.route(f'{ADMIN_PREFIX}fixtures', 'POST', admin_fixtures, name='admin.fixtures')
        app.route(f'{ADMIN_PREFIX}faults', 'POST', admin_faults, name='admin.faults')
    return app


def before_request() -> None:
    environ, app = bottle.request.environ, bottle.request.app
    bottle.response.content_type = 'application/json'
    if environ['REQUEST_METHOD'] == 'GET' and environ['PATH_INFO'] in app.public_paths:
        return  # so that a browser or a code generator can start here
    check_bearer(environ.get('HTTP_AUTHORIZATION'), app.api_keys)


def with_faults(operation: Any) -> Any:
    """Let ``fail_next()`` answer for ``operation`` once the key has been accepted."""
    @functools.wraps(operation)
    def operation_or_fault(*args: Any, **kwargs: Any) -> str:
        request = bottle.request
        status = request.app.take_fault(request.route.name)
        if status == 'drop':
            request.environ[DROP_CONNECTION] = True
            return ''
        if status is not None:
            phrase = http.HTTPStatus(status).phrase
            raise ApiError(status, phrase.lower().replace(' ', '_').replace('-', '_'),
                           f'{phrase} (a fault queued with fail_next)')
        return operation(*args, **kwargs)
    return operation_or_fault


# The operations.

def list_pets() -> str:
    options = parse_list_query(bottle.request.query.dict)
    return bottle.request.app.store.list_json(**options) + '\n'


def create_pet() -> str:
    app, request = bottle.request.app, bottle.request
    check_content_type(request.content_type)
    new_pet = parse_new_pet(parse_json_object(read_body(request)))
    pet = app.store.add(new_pet)
    bottle.response.status = 201
    bottle.response.set_header('Location', f'{base_url_path()}/pets/{pet["id"]}')
    return to_json(pet)


def read_body(request: bottle.BaseRequest) -> bytes:
    """The request body, up to MAX_BODY_BYTES, or 413."""
    if request.content_length > MAX_BODY_BYTES:
        raise body_too_large()
    # Bottle spools a large body to a temporary file, and leaves it open.
    with request.body as body:
        raw = body.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise body_too_large()
    return raw


def body_too_large() -> ApiError:
    return ApiError(413, 'payload_too_large',
                    f'the body is over {MAX_BODY_BYTES} bytes, the most a NewPet may take')


def get_pet(pet_id: str) -> str:
    pet = bottle.request.app.store.get_json(parse_pet_id(pet_id))
    if pet is None:
        raise ApiError(404, 'not_found', f'no pet has id {pet_id}')
    bottle.response.set_header('Deprecation', f'@{DEPRECATED_SINCE}')
    bottle.response.set_header('Sunset', SUNSET)
    bottle.response.set_header('Link', f'<{base_url_path()}/pets>; rel="successor-version"')
    return pet + '\n'


def list_orders() -> str:
    raise ApiError(501, 'not_implemented',
                   'the store-orders operation is named by the spec but not described; '
                   'the stub does not serve it')


def base_url_path() -> str:
    """The base path as the client sees it, under any WSGI mount point."""
    return bottle.request.script_name.rstrip('/') + bottle.request.app.base_path


# The public documents: the index and the OpenAPI description.

def index() -> str:
    app, request = bottle.request.app, bottle.request
    base = base_url_path()
    demo = f' (here the demo key {DEMO_API_KEY})' if DEMO_API_KEY in app.api_keys else ''
    return to_json({
        'name': 'Pet Store API (petstore-stub)',
        'version': API_VERSION,
        'base_path': base,
        'base_url': f'{request.urlparts.scheme}://{request.urlparts.netloc}{base}',
        'openapi': f'{base}/openapi.json',
        'operations': {
            'listPets': f'GET {base}/pets?limit=1..100&status=available|pending|sold',
            'createPet': f'POST {base}/pets',
            'getPet': f'GET {base}/pets/{{petId}} (deprecated, sunset {SUNSET})',
            'listOrders': f'GET {base}/store/orders (not implemented: 501)',
        },
        'authentication': f'send the header Authorization: Bearer <API key>{demo}; '
                          'the stub prints its key when it starts',
    })


def openapi_json() -> str:
    return to_json(openapi_document(base_url_path(), bottle.request.app.base_path))


def answer_preflight(start_response: Any) -> list[bytes]:
    """A CORS preflight: browsers send it without credentials, so it needs no key."""
    start_response('204 No Content', [
        ('Access-Control-Allow-Origin', '*'),
        ('Access-Control-Allow-Methods', 'GET, POST, OPTIONS'),
        ('Access-Control-Allow-Headers', CORS_ALLOW_HEADERS),
        ('Access-Control-Max-Age', CORS_MAX_AGE),
    ])
    return []


# The admin endpoints (``--admin``; always on in ``serve()``).

def admin_reset() -> str:
    bottle.request.app.clear()
    bottle.response.status = 204
    return ''


def admin_requests() -> str:
    return to_json(bottle.request.app.requests)


def admin_fixtures() -> str:
    bottle.response.status = 201
    return to_json(bottle.request.app.load_fixtures())


def admin_faults() -> str:
    check_content_type(bottle.request.content_type)
    fault = parse_fault(parse_json_object(read_body(bottle.request)))
    bottle.request.app.fail_next(**fault)
    bottle.response.status = 201
    return to_json(fault)


# What every request shares.

#: Set in the WSGI environ when a fault asks for the connection to be dropped.
DROP_CONNECTION = 'petstore_stub.drop_connection'


def buffer_body(environ: dict) -> bytes | None:
    """Read a body of up to MAX_BODY_BYTES for the journal, leaving a copy for the app."""
    try:
        length = int(environ.get('CONTENT_LENGTH') or 0)
    except ValueError:
        return None
    if not 0 < length <= MAX_BODY_BYTES:
        return None
    raw = environ['wsgi.input'].read(length)
    environ['wsgi.input'] = io.BytesIO(raw)
    return raw


def journal_entry(environ: dict, body: bytes | None, status: int | None) -> dict:
    route = environ.get('bottle.route')
    return {
        'method': environ['REQUEST_METHOD'],
        'path': environ.get('PATH_INFO', ''),
        'query': environ.get('QUERY_STRING', ''),
        'operation': route.name if route is not None else None,
        'headers': request_headers(environ),
        'body': decode_journal_body(body),
        'status': status,
        'time': time.time(),
    }


def request_headers(environ: dict) -> dict[str, str]:
    headers = {key[5:].replace('_', '-').title(): value
               for key, value in environ.items() if key.startswith('HTTP_')}
    for key in ('CONTENT_TYPE', 'CONTENT_LENGTH'):
        if environ.get(key):
            headers[key.replace('_', '-').title()] = environ[key]
    return headers


def decode_journal_body(body: bytes | None) -> Any:
    """The body as JSON when it parses, else as text; None when there was none."""
    if not body:
        return None
    text = body.decode('utf-8', 'replace')
    try:
        return json.loads(text)
    except ValueError:
        return text


def drop_connection(environ: dict) -> list[bytes]:
    """Close the client's connection with no response (``fail_next("drop")``)."""
    channel = getattr(environ.get('waitress.client_disconnected'), '__self__', None)
    if channel is None:
        raise ConnectionAbortedError('fail_next("drop") closes a real connection: use serve()')
    channel.socket.shutdown(socket.SHUT_RDWR)
    return []


ERROR_CODES = {400: 'bad_request', 404: 'not_found', 405: 'method_not_allowed',
               413: 'payload_too_large', 500: 'internal_error'}


def render_bottle_error(error: bottle.HTTPError) -> str:
    """Bottle's own errors (no route, wrong method, a crash) as the Error body."""
    request = bottle.request
    status = error.status_code
    if status == 404:
        message = f'nothing is at {request.path}'
    elif status == 405:
        message = f'{request.method} is not allowed on {request.path}; use {error.get_header("Allow")}'
    elif status == 500:
        message = 'the stub failed on this request; its log has the traceback'
        if error.exception is not None:
            request.app.errors.append(error.exception)
    else:
        message = str(error.body)
    bottle.response.content_type = 'application/json'
    return error_json(status, ERROR_CODES.get(status, f'http_{status}'), message)


# -- The OpenAPI description --------------------------------------------------

def openapi_document(served_base: str, base_path: str) -> dict:
    """OpenAPI 3.0 for exactly what the stub serves, ``GET <base path>/openapi.json``."""
    other_base = STAGING_BASE_PATH if base_path == BASE_PATH else BASE_PATH
    servers = [{'url': served_base, 'description': 'this stub'},
               {'url': other_base, 'description': 'the same stub run with'
                + (' --staging' if other_base == STAGING_BASE_PATH else 'out --staging')}]
    return {
        'openapi': '3.0.3',
        'info': {
            'title': 'Pet Store API', 'version': API_VERSION,
            'description': 'Served by petstore-stub, a strict local stub. Every error has the '
                           'Error body. Unknown paths answer 404 and wrong methods 405, '
                           'both with an Error body.',
        },
        'servers': servers,
        'security': [{'bearerAuth': []}],
        'paths': {
            '/pets': {'get': list_pets_operation(), 'post': create_pet_operation()},
            '/pets/{petId}': {'get': get_pet_operation()},
            '/store/orders': {'get': list_orders_operation()},
        },
        'components': openapi_components(),
    }


def json_response(description: str, schema: str, headers: dict | None = None) -> dict:
    content = {'application/json': {'schema': {'$ref': f'#/components/schemas/{schema}'}}}
    response = {'description': description, 'content': content}
    if headers:
        response['headers'] = headers
    return response


def error_response(description: str, headers: dict | None = None) -> dict:
    return json_response(description, 'Error', headers)


def header(description: str, example: str) -> dict:
    return {'description': description, 'schema': {'type': 'string'}, 'example': example}


UNAUTHORIZED = {'$ref': '#/components/responses/Unauthorized'}
INTERNAL_ERROR = error_response('internal_error, or storage_error when the file cannot be written')


def list_pets_operation() -> dict:
    return {
        'operationId': 'listPets', 'summary': 'List pets, in ascending id order',
        'description': 'The limit applies after the status filter. No pagination beyond limit; '
                       'any other query parameter, or one given twice, is a 400.',
        'parameters': [
            {'name': 'limit', 'in': 'query', 'required': False,
             'schema': {'type': 'integer', 'format': 'int32', 'minimum': LIMIT_MIN,
                        'maximum': LIMIT_MAX, 'default': LIMIT_DEFAULT}},
            {'name': 'status', 'in': 'query', 'required': False,
             'schema': {'$ref': '#/components/schemas/PetStatus'}},
        ],
        'responses': {
            '200': json_response('At most limit pets', 'Pets'),
            '400': error_response('invalid_parameter: a bad limit or status, or an unknown '
                                  'parameter'),
            '401': UNAUTHORIZED,
            '500': INTERNAL_ERROR,
        },
    }


def create_pet_operation() -> dict:
    return {
        'operationId': 'createPet', 'summary': 'Add a pet',
        'requestBody': {'required': True, 'content': {'application/json': {
            'schema': {'$ref': '#/components/schemas/NewPet'}}}},
        'responses': {
            '201': json_response('The pet was added and is on disk', 'Pet', {
                'Location': header('The new pet', f'{BASE_PATH}/pets/14')}),
            '400': error_response('invalid_body: not one JSON object, a missing or invalid field, '
                                  'or an unknown field'),
            '401': UNAUTHORIZED,
            '413': error_response(f'payload_too_large: the body is over {MAX_BODY_BYTES} bytes'),
            '415': error_response('unsupported_media_type: the body is not application/json'),
            '500': INTERNAL_ERROR,
        },
    }


def get_pet_operation() -> dict:
    return {
        'operationId': 'getPet', 'summary': 'Get a pet by id', 'deprecated': True,
        'description': f'Deprecated; removed on {SUNSET}. Use GET /pets with the status filter.',
        'parameters': [{'name': 'petId', 'in': 'path', 'required': True,
                        'schema': {'type': 'integer', 'format': 'int64'}}],
        'responses': {
            '200': json_response('The pet', 'Pet', {
                'Deprecation': header('RFC 9745: since when', f'@{DEPRECATED_SINCE}'),
                'Sunset': header('RFC 8594: when it goes away', SUNSET),
                'Link': header('The replacement', f'<{BASE_PATH}/pets>; rel="successor-version"'),
            }),
            '400': error_response('invalid_parameter: petId is not an int64'),
            '401': UNAUTHORIZED,
            '404': error_response('not_found: no pet has that id'),
            '500': INTERNAL_ERROR,
        },
    }


def list_orders_operation() -> dict:
    return {
        'operationId': 'listOrders', 'summary': 'Store orders: named by the spec, not described',
        'responses': {'401': UNAUTHORIZED,
                      '501': error_response('not_implemented: the stub does not serve orders')},
    }


def openapi_components() -> dict:
    int64 = {'type': 'integer', 'format': 'int64'}
    new_pet_fields = {'name': {'type': 'string', 'minLength': 1}, 'categoryId': int64,
                      'status': {'$ref': '#/components/schemas/PetStatus'}}
    return {
        'securitySchemes': {'bearerAuth': {
            'type': 'http', 'scheme': 'bearer',
            'description': 'The API key as a bearer token. Keys are set with --api-key; '
                           f'on loopback the demo key {DEMO_API_KEY} works by default.'}},
        'responses': {'Unauthorized': error_response(
            'unauthorized (no bearer credentials) or invalid_token (a wrong key)',
            {'WWW-Authenticate': header('RFC 6750 challenge', f'Bearer realm="{REALM}"')})},
        'schemas': {
            'PetStatus': {'type': 'string', 'enum': list(PET_STATUSES)},
            'NewPet': {'type': 'object', 'required': ['name', 'categoryId'],
                       'properties': new_pet_fields, 'additionalProperties': False},
            'Pet': {'type': 'object', 'required': ['id', 'name', 'categoryId'],
                    'properties': {'id': {**int64, 'minimum': 1}, **new_pet_fields},
                    'additionalProperties': False},
            'Pets': {'type': 'array', 'items': {'$ref': '#/components/schemas/Pet'}},
            'Error': {'type': 'object', 'required': ['code', 'message', 'status'],
                      'properties': {'code': {'type': 'string'}, 'message': {'type': 'string'},
                                     'status': {'type': 'integer'}}},
        },
    }


# -- Serving ------------------------------------------------------------------

class ServerError(Exception):
    """An exception raised inside the server thread, re-raised in the caller's."""


#: With --trust-proxy, waitress takes the client's scheme and host from these.
TRUSTED_PROXY_HEADERS = {'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port',
                         'x-forwarded-for'}


class StubServer:
    """The app served by waitress on a real socket, in a daemon thread.

    HTTP/1.1 with keep-alive and a pool of worker threads. ``port=0`` picks a
    free port; ``url`` has the real one once started. The test-facing methods
    (``reset``, ``add_pet``, ``fail_next``, ``requests``, ``delay``) act on the app.
    """

    def __init__(self, app: StubApp, host: str = '127.0.0.1', port: int = 0,
                 threads: int = SERVER_THREADS, trust_proxy: bool = False) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.threads = threads
        self.trust_proxy = trust_proxy
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.errors: list[BaseException] = []

    @property
    def url(self) -> str:
        """The base URL, such as ``http://127.0.0.1:54321/v1``."""
        host = f'[{self.host}]' if ':' in self.host else self.host
        return f'http://{host}:{self.port}{self.app.base_path}'

    @property
    def api_key(self) -> str:
        return self.app.api_keys[0]

    @property
    def headers(self) -> dict[str, str]:
        """The Authorization header, to pass to a client."""
        return {'Authorization': f'Bearer {self.api_key}'}

    # Acting on the app, for tests.

    def reset(self) -> None:
        """Empty the store and the journal (ids restart at 1); drop faults and delay."""
        self.app.clear()

    def add_pet(self, name: str, categoryId: int, status: str | None = None) -> dict:
        return self.app.add_pet(name, categoryId, status)

    def load_fixtures(self, path: str | os.PathLike | bool | None = None) -> list[dict]:
        return self.app.load_fixtures(path)

    def fail_next(self, status: int | str, times: int = 1, route: str | None = None) -> None:
        self.app.fail_next(status, times, route)

    @property
    def requests(self) -> list[dict]:
        return self.app.requests

    @property
    def delay(self) -> float:
        """Seconds added before each API response, to test a client's timeouts."""
        return self.app.delay

    @delay.setter
    def delay(self, seconds: float) -> None:
        self.app.delay = seconds

    def check(self) -> None:
        """Raise ServerError if anything failed inside the server since the last check."""
        errors = self.errors + self.app.errors
        self.errors.clear()
        self.app.errors.clear()
        if errors:
            raise ServerError(f'the stub server failed: {errors[0]!r}'
                              + (f' (and {len(errors) - 1} more)' if len(errors) > 1 else '')
                              ) from errors[0]

    # Running.

    def bind(self) -> None:
        """Open the listening socket (and learn the port) without serving yet."""
        if self._server is not None:
            raise RuntimeError('this server is already started')
        # waitress warns on every queued request; under load that is a log line per request.
        logging.getLogger('waitress.queue').setLevel(logging.ERROR)
        proxy = {'trusted_proxy': '*', 'trusted_proxy_headers': TRUSTED_PROXY_HEADERS,
                 } if self.trust_proxy else {}
        self._server = waitress.create_server(
            self.app, host=self.host, port=self.port, threads=self.threads,
            ident='petstore-stub', max_request_body_size=SERVER_MAX_BODY_BYTES, **proxy)
        self.port = int(self._server.effective_port)

    def start(self) -> StubServer:
        """Serve in a daemon thread; a second start raises RuntimeError."""
        self.bind()
        self._thread = threading.Thread(target=self.serve_forever, name=f'petstore-stub:{self.port}',
                                        daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        try:
            self._server.run()
        except BaseException as error:
            self.errors.append(error)
            raise

    def stop(self) -> None:
        """Close the socket and every connection at once, and wait for the threads."""
        server = self._server
        if server is None:
            return
        if self._thread is not None and self._thread.is_alive():
            # The event loop sleeps in poll(); the trigger wakes it to close the
            # connections itself. The trigger's own pipe is closed only once the
            # loop has ended: the loop may run the thunk before pull_trigger returns.
            server.trigger.pull_trigger(functools.partial(close_connections, server))
            self._thread.join(timeout=5)
        else:
            close_connections(server)
        server.trigger.close()
        server.task_dispatcher.shutdown(timeout=5)

    def __enter__(self) -> StubServer:
        return self.start() if self._server is None else self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()


def close_connections(server: Any) -> None:
    """Close waitress's sockets and take its trigger out of the loop, which then ends."""
    for dispatcher in list(server._map.values()):
        try:
            if dispatcher is server:
                # waitress's own close() would close the trigger too, while it may be in use.
                wasyncore.dispatcher.close(server)
            elif dispatcher is not server.trigger:
                dispatcher.close()
        except OSError:
            pass  # already closed by its client
    server.trigger.del_channel()


@contextmanager
def serve(*, db: str | os.PathLike | None = None, api_key: str = DEMO_API_KEY,
          staging: bool = False, fixtures: str | os.PathLike | bool | None = None,
          cors: bool = False, host: str = '127.0.0.1', port: int = 0,
          journal_size: int = JOURNAL_SIZE) -> Iterator[StubServer]:
    """Run a stub (admin endpoints on) for the duration of a ``with`` block.

    In memory unless ``db`` is a file; ``fixtures=True`` loads the demo
    animals, a path loads that file. On leaving the block the server stops,
    then ``check()`` raises anything that failed inside it.
    """
    store = PetStore(db)
    try:
        app = create_app(store, [api_key], STAGING_BASE_PATH if staging else BASE_PATH,
                         admin=True, cors=cors, journal_size=journal_size)
        if fixtures:
            app.load_fixtures(fixtures)
        with StubServer(app, host, port) as server:
            yield server
    finally:
        store.close()
    server.check()


# -- The command line ---------------------------------------------------------

EXAMPLES = f"""\
examples:
  petstore-stub --fixtures                  demo animals, http://127.0.0.1:8080/v1
  petstore-stub --db :memory: --port 0      nothing kept, any free port
  petstore-stub --staging --api-key s3cret  serve /staging/v1, accept only s3cret
  PORT=10000 petstore-stub --host 0.0.0.0   as a hosting platform runs it (a key is generated)

On loopback the stub accepts the demo key {DEMO_API_KEY!r} unless keys are given.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='petstore-stub', description='A local stub server for the Pet Store API.',
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--host', default='127.0.0.1',
                        help='address to listen on (default: %(default)s)')
    parser.add_argument('--port', type=int, default=None,
                        help=f'port, 0 for any free one (default: $PORT or {DEFAULT_PORT})')
    parser.add_argument('--api-key', action='append', default=[], metavar='KEY', dest='api_keys',
                        help='accept this bearer key; repeatable (also $PETSTORE_API_KEYS, '
                             'comma-separated)')
    parser.add_argument('--db', default=DEFAULT_DB, metavar='PATH',
                        help=f'TinyDB file, or {MEMORY_DB} to keep nothing (default: %(default)s)')
    parser.add_argument('--fixtures', nargs='?', const='', default=None, metavar='FILE',
                        help='load the demo animals (or those in FILE) into an empty store')
    parser.add_argument('--staging', action='store_true',
                        help=f'serve under {STAGING_BASE_PATH} instead of {BASE_PATH}')
    parser.add_argument('--cors', action='store_true',
                        help='let browser pages on any origin call the stub')
    parser.add_argument('--trust-proxy', action='store_true',
                        help='take the client\'s scheme and host from X-Forwarded-* headers '
                             '(only behind a proxy you run, such as a hosting platform\'s)')
    parser.add_argument('--admin', action='store_true',
                        help=f'add the {ADMIN_PREFIX} endpoints (reset, requests, fixtures, faults) '
                             'for test suites')
    parser.add_argument('--quiet', action='store_true', help='no access log')
    parser.add_argument('--version', action='version', version=f'%(prog)s {__version__}')
    return parser


def is_loopback(host: str) -> bool:
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def choose_api_keys(given: list[str], host: str) -> tuple[list[str], bool]:
    """The keys to accept, and whether they were generated; ValueError if unsafe."""
    from_environment = os.environ.get('PETSTORE_API_KEYS', '')
    keys = given + [key.strip() for key in from_environment.split(',') if key.strip()]
    for key in keys:
        if not TOKEN_PATTERN.fullmatch(key):
            raise ValueError(f'API key {key!r} is not a valid bearer token '
                             '(letters, digits and -._~+/ only)')
    if keys and DEMO_API_KEY in keys and not is_loopback(host):
        raise ValueError(f'the demo key is published; choose another key to serve {host}')
    if keys:
        return keys, False
    if is_loopback(host):
        return [DEMO_API_KEY], False
    return [secrets.token_urlsafe(24)], True


def choose_port(given: int | None) -> int:
    if given is not None:
        return given
    from_environment = os.environ.get('PORT', '').strip()
    if not from_environment:
        return DEFAULT_PORT
    if not from_environment.isdigit():
        raise ValueError(f'PORT must be a port number; got {from_environment!r}')
    return int(from_environment)


def load_fixtures_once(store: PetStore, path: str) -> int:
    """Load fixtures into an empty store only, so a restart never duplicates them."""
    new_pets = read_fixtures(path)
    return 0 if len(store) else len(store.add_many(new_pets))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the stub until Ctrl-C or SIGTERM; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        api_keys, generated = choose_api_keys(args.api_keys, args.host)
        port = choose_port(args.port)
    except ValueError as error:
        parser.error(str(error))
    try:
        store = PetStore(None if args.db == MEMORY_DB else args.db)
    except DatabaseError as error:
        print(f'petstore-stub: {error}', file=sys.stderr)
        return 1
    try:
        return serve_store(store, api_keys, generated, port, args)
    finally:
        store.close()


def serve_store(store: PetStore, api_keys: list[str], generated: bool, port: int,
                args: argparse.Namespace) -> int:
    try:
        loaded = load_fixtures_once(store, args.fixtures) if args.fixtures is not None else 0
    except (DatabaseError, ApiError) as error:
        print(f'petstore-stub: {error}', file=sys.stderr)
        return 1
    # Without --admin nothing can read the journal, so none is kept.
    app = create_app(store, api_keys, STAGING_BASE_PATH if args.staging else BASE_PATH,
                     admin=args.admin, cors=args.cors,
                     journal_size=JOURNAL_SIZE if args.admin else 0,
                     access_log=None if args.quiet else sys.stdout)
    server = StubServer(app, args.host, port, trust_proxy=args.trust_proxy)
    try:
        server.bind()
    except OSError as error:
        print(f'petstore-stub: cannot listen on {args.host}:{port}: {error.strerror}',
              file=sys.stderr)
        return 1
    print_banner(server, store, api_keys[0], generated, loaded, args)
    return run_until_stopped(server)


def print_banner(server: StubServer, store: PetStore, api_key: str, generated: bool,
                 loaded: int, args: argparse.Namespace) -> None:
    where = 'memory' if store.path is None else str(store.path)
    fixtures = f', {loaded} loaded from fixtures' if loaded else ''
    print(f'petstore-stub {__version__}: {len(store)} pets in {where}{fixtures}', flush=True)
    if generated:
        print(f'generated API key (not published anywhere): {api_key}', flush=True)
    url = server.url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:')
    print(f"serving {url}  try: curl -H 'Authorization: Bearer {api_key}' {url}/pets", flush=True)


def run_until_stopped(server: StubServer) -> int:
    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


# -- pytest fixtures ----------------------------------------------------------
# The package registers this module under the ``pytest11`` entry point. The
# fixtures exist only when pytest is already running, so serving the stub
# never imports pytest, nor needs it installed.

if 'pytest' in sys.modules:
    import pytest

    @pytest.fixture(scope='session')
    def petstore_api_key() -> str:
        """The key the fixture server accepts; override (session scope) to change it."""
        return DEMO_API_KEY

    @pytest.fixture(scope='session')
    def petstore_staging() -> bool:
        """True serves under /staging/v1; override (session scope) to change it."""
        return False

    @pytest.fixture
    def petstore_fixtures() -> str | os.PathLike | bool | None:
        """Loaded before each test: None (nothing), True (the demo animals) or a file."""
        return None

    @pytest.fixture(scope='session')
    def petstore_session_server(petstore_api_key: str,
                                petstore_staging: bool) -> Iterator[StubServer]:
        with serve(api_key=petstore_api_key, staging=petstore_staging) as server:
            yield server

    @pytest.fixture
    def petstore_server(petstore_session_server: StubServer,
                        petstore_fixtures: Any) -> Iterator[StubServer]:
        """The session's stub server, emptied (store, journal, faults) for this test."""
        server = petstore_session_server
        server.reset()
        if petstore_fixtures:
            server.load_fixtures(petstore_fixtures)
        yield server
        server.check()

    @pytest.fixture
    def petstore_app(petstore_api_key: str, petstore_staging: bool,
                     petstore_fixtures: Any) -> Any:
        """A webtest.TestApp over a fresh in-process app, the Authorization header preset."""
        import webtest

        app = create_app(api_keys=[petstore_api_key], admin=True,
                         base_path=STAGING_BASE_PATH if petstore_staging else BASE_PATH)
        if petstore_fixtures:
            app.load_fixtures(petstore_fixtures)
        client = webtest.TestApp(app)
        client.authorization = ('Bearer', petstore_api_key)
        return client


if __name__ == '__main__':
    raise SystemExit(main())
