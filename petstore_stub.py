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

Every error is the spec's Error body ``{"code", "message", "status"}``.

Flags (``python petstore_stub.py --help``): ``--host``, ``--port`` (or
``PORT``), ``--api-key`` (or ``PETSTORE_API_KEYS``), ``--db PATH|:memory:``,
``--fixtures [FILE]``, ``--staging``, ``--quiet``.

The file reads in the order a request flows:

1. constants
2. ``ApiError``: the one exception, and the Error body it renders
3. storage: ``DurableJSONStorage`` (a TinyDB storage) and ``PetStore``
4. validation: pure functions from raw input to clean values
5. auth: the bearer key
6. the app: ``create_app()`` and the routes
7. serving: ``StubServer`` (waitress in a thread) and ``serve()``
8. the command line: ``main()``
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import itertools
import json
import os
import re
import secrets
import signal
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
    'ApiError', 'DatabaseError', 'DurableJSONStorage', 'PetStore', 'StubServer',
    'create_app', 'main', 'parse_limit', 'parse_new_pet', 'parse_pet_id',
    'parse_status', 'serve',
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

DEFAULT_DB = 'petstore.json'
MEMORY_DB = ':memory:'
PETS_TABLE = 'pets'
DEFAULT_PORT = 8080
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
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def load_database(path: Path) -> dict[str, dict[str, dict]]:
    """Read and check a TinyDB file; raise DatabaseError naming what is wrong."""
    try:
        text = path.read_bytes().decode('utf-8')
        tables = json.loads(text, parse_constant=reject_constant) if text.strip() else {}
    except (OSError, ValueError) as error:
        raise DatabaseError(f'{path}: not a readable JSON file ({error})') from None
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


class DurableJSONStorage(Storage):
    """A TinyDB storage that reads its file once and writes it crash-safely.

    ``read()`` returns the tables held in memory, so no request re-parses the
    file. ``write()`` only updates memory; ``sync()`` puts every write made so
    far on disk, and one disk write serves all the callers waiting for it
    (group commit).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        super().__init__()
        self.path = Path(path)
        if self.path.exists():
            self._tables = load_database(self.path)
        else:
            self._tables = {PETS_TABLE: {}}
            self._write_file(to_json(self._tables))
        self._writes = 0  #: writes to memory so far
        self._synced = 0  #: of those, how many are on disk
        self._sync_lock = threading.Lock()

    def read(self) -> dict[str, dict[str, dict]]:
        return self._tables

    def write(self, data: dict[str, dict[str, dict]]) -> None:
        self._tables = data
        self._writes += 1

    def sync(self, memory_lock: threading.Lock) -> None:
        """Return once every write made before the call is on disk."""
        wanted = self._writes
        with self._sync_lock:
            if self._synced >= wanted:
                return
            with memory_lock:
                text = to_json(self._tables)
                written = self._writes
            self._write_file(text)
            self._synced = written

    def _write_file(self, text: str) -> None:
        try:
            write_atomically(self.path, text)
        except OSError as error:
            raise ApiError(500, 'storage_error', f'could not write {self.path}: {error.strerror}') from None


class PetStore:
    """The pets, in a TinyDB table, behind one lock.

    ``PetStore()`` keeps them in memory; ``PetStore(path)`` in a JSON file
    that holds every pet whose creation was acknowledged.
    """

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        if path is None:
            self._db = TinyDB(storage=MemoryStorage)
        else:
            self._db = TinyDB(path, storage=DurableJSONStorage)
        self._table = self._db.table(PETS_TABLE, cache_size=0)
        self._lock = threading.Lock()
        self.path = None if path is None else Path(path)

    def add(self, new_pet: Mapping[str, Any]) -> dict:
        """Store a validated NewPet; return the Pet once it is durable."""
        return self.add_many([new_pet])[0]

    def add_many(self, new_pets: Sequence[Mapping[str, Any]]) -> list[dict]:
        with self._lock:
            pet_ids = self._table.insert_multiple(dict(pet) for pet in new_pets)
        self._sync()
        return [as_pet(pet_id, pet) for pet_id, pet in zip(pet_ids, new_pets)]

    def get(self, pet_id: int) -> dict | None:
        with self._lock:
            document = self._table.get(doc_id=pet_id) if pet_id > 0 else None
        return None if document is None else as_pet(pet_id, document)

    def list(self, limit: int, status: str | None = None) -> list[dict]:
        """The first ``limit`` pets by id, of ``status`` if given."""
        with self._lock:
            documents: Iterable = iter(self._table)
            if status is not None:
                documents = (doc for doc in documents if doc.get('status') == status)
            return [as_pet(doc.doc_id, doc) for doc in itertools.islice(documents, limit)]

    def __len__(self) -> int:
        with self._lock:
            return len(self._table)

    def reset(self) -> None:
        """Remove every pet; ids start again at 1."""
        with self._lock:
            self._table.truncate()
        self._sync()

    def _sync(self) -> None:
        storage = self._db.storage
        if isinstance(storage, DurableJSONStorage):
            storage.sync(self._lock)


def as_pet(pet_id: int, document: Mapping[str, Any]) -> dict:
    return {'id': pet_id, **document}


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
    """The Pet Store as a WSGI app: bottle's routing plus what every response shares.

    Every response passes through ``wsgi()``, errors included, so the access
    log sees the status that was really sent.
    """

    def __init__(self, store: PetStore, api_keys: Sequence[str], base_path: str,
                 access_log: IO[str] | None) -> None:
        super().__init__()
        self.store = store
        self.api_keys = tuple(api_keys)
        self.base_path = base_path
        self.access_log = access_log

    def wsgi(self, environ: dict, start_response: Any) -> Any:
        started = time.perf_counter()
        sent: list[str] = []

        def logged_start_response(status: str, headers: list, exc_info: Any = None) -> Any:
            sent.append(status)
            return start_response(status, headers, exc_info)

        body = super().wsgi(environ, logged_start_response)
        if self.access_log is not None and sent:
            milliseconds = (time.perf_counter() - started) * 1000
            path = environ.get('PATH_INFO', '')
            query = environ.get('QUERY_STRING')
            print(f'{environ["REQUEST_METHOD"]} {path}{"?" + query if query else ""} '
                  f'{sent[-1][:3]} {milliseconds:.1f}ms', file=self.access_log, flush=True)
        return body


def create_app(store: PetStore | None = None, api_keys: Sequence[str] = (DEMO_API_KEY,),
               base_path: str = BASE_PATH, *, access_log: IO[str] | None = None) -> StubApp:
    """Build the WSGI app over ``store`` (a fresh in-memory one by default).

    ``api_keys`` are the bearer keys it accepts; ``base_path`` is ``/v1`` or
    ``/staging/v1``; ``access_log`` gets one line per request.
    """
    if not api_keys:
        raise ValueError('give at least one API key')
    app = StubApp(store if store is not None else PetStore(), api_keys, base_path, access_log)
    app.add_hook('before_request', before_request)
    app.default_error_handler = render_bottle_error
    app.route(f'{base_path}/pets', 'GET', list_pets, name='listPets')
    app.route(f'{base_path}/pets', 'POST', create_pet, name='createPet')
    app.route(f'{base_path}/pets/<pet_id>', 'GET', get_pet, name='getPet')
    app.route(f'{base_path}/store/orders', 'GET', list_orders, name='listOrders')
    return app


def before_request() -> None:
    bottle.response.content_type = 'application/json'
    check_bearer(bottle.request.get_header('Authorization'), bottle.request.app.api_keys)


def list_pets() -> str:
    options = parse_list_query(bottle.request.query.dict)
    return to_json(bottle.request.app.store.list(**options))


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
    too_large = ApiError(413, 'payload_too_large', f'the body is over {MAX_BODY_BYTES} bytes, '
                         'the most a NewPet may take')
    if request.content_length > MAX_BODY_BYTES:
        raise too_large
    # Bottle spools a large body to a temporary file, and leaves it open.
    with request.body as body:
        raw = body.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise too_large
    return raw


def get_pet(pet_id: str) -> str:
    pet = bottle.request.app.store.get(parse_pet_id(pet_id))
    if pet is None:
        raise ApiError(404, 'not_found', f'no pet has id {pet_id}')
    bottle.response.set_header('Deprecation', f'@{DEPRECATED_SINCE}')
    bottle.response.set_header('Sunset', SUNSET)
    bottle.response.set_header('Link', f'<{base_url_path()}/pets>; rel="successor-version"')
    return to_json(pet)


def list_orders() -> str:
    raise ApiError(501, 'not_implemented',
                   'the store-orders operation is named by the spec but not described; '
                   'the stub does not serve it')


def base_url_path() -> str:
    """The base path as the client sees it, under any WSGI mount point."""
    return bottle.request.script_name.rstrip('/') + bottle.request.app.base_path


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
    else:
        message = str(error.body)
    bottle.response.content_type = 'application/json'
    return error_json(status, ERROR_CODES.get(status, f'http_{status}'), message)


# -- Serving ------------------------------------------------------------------

class StubServer:
    """The app served by waitress on a real socket, in a daemon thread.

    HTTP/1.1 with keep-alive and a pool of worker threads. ``port=0`` picks a
    free port; ``url`` has the real one once started.
    """

    def __init__(self, app: StubApp, host: str = '127.0.0.1', port: int = 0,
                 threads: int = 4) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.threads = threads
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.errors: list[BaseException] = []

    @property
    def url(self) -> str:
        host = f'[{self.host}]' if ':' in self.host else self.host
        return f'http://{host}:{self.port}{self.app.base_path}'

    def bind(self) -> None:
        """Open the listening socket (and learn the port) without serving yet."""
        if self._server is not None:
            raise RuntimeError('this server is already started')
        self._server = waitress.create_server(
            self.app, host=self.host, port=self.port, threads=self.threads,
            ident='petstore-stub', max_request_body_size=SERVER_MAX_BODY_BYTES)
        self.port = self._server.effective_port

    def start(self) -> StubServer:
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
            # The event loop sleeps in poll(); the trigger wakes it to close everything itself.
            server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))
            self._thread.join(timeout=5)
        else:
            wasyncore.close_all(server._map)
        server.task_dispatcher.shutdown(timeout=5)

    def __enter__(self) -> StubServer:
        return self.start() if self._server is None else self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()


@contextmanager
def serve(*, db: str | os.PathLike | None = None, api_key: str = DEMO_API_KEY,
          staging: bool = False, host: str = '127.0.0.1', port: int = 0) -> Iterator[StubServer]:
    """Run a stub on a free loopback port for the duration of a ``with`` block."""
    app = create_app(PetStore(db), [api_key], STAGING_BASE_PATH if staging else BASE_PATH)
    with StubServer(app, host, port) as server:
        yield server


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


def load_fixtures(store: PetStore, path: str | os.PathLike | None = None) -> int:
    """Add the animals of a fixtures file to an empty store; return how many were added."""
    path = Path(path) if path else demo_fixtures_path()
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
    if len(store):
        return 0
    return len(store.add_many(new_pets))


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
        loaded = load_fixtures(store, args.fixtures) if args.fixtures is not None else 0
    except (DatabaseError, ApiError) as error:
        print(f'petstore-stub: {error}', file=sys.stderr)
        return 1
    app = create_app(store, api_keys, STAGING_BASE_PATH if args.staging else BASE_PATH,
                     access_log=None if args.quiet else sys.stdout)
    server = StubServer(app, args.host, port)
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


if __name__ == '__main__':
    raise SystemExit(main())
