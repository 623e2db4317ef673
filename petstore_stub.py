"""A local stub server for the Pet Store API (version 1.0.0), in one file.

It answers the operations of the Pet Store service, checks the bearer key on every call,
validates strictly, and keeps its pets in a TinyDB JSON file that survives a crash::

    python petstore_stub.py --fixtures          # demo data, http://127.0.0.1:8080/v1
    curl -H 'Authorization: Bearer petstore-demo-key' http://127.0.0.1:8080/v1/pets

Operations, under the base path ``/v1`` (``/staging/v1`` with ``--staging``):

    GET  /pets            listPets   ?limit=1..100 (default 20) &status=available|pending|sold
    POST /pets            createPet  {"name": str, "categoryId": int64, "status"?: str}
    GET  /pets/{petId}    getPet     deprecated, sunset Thu, 05 Dec 2030
    GET  /store/orders    named by the spec but not shown there: 501

Every error is the spec's Error body ``{"code", "message", "status"}``. ``GET /``
(a page for a browser, ``data/index.html``; a JSON index for anyone else; ``/docs`` leads there)
and ``GET <base path>/openapi.json`` (OpenAPI 3.0) need no key.

The flags: ``python petstore_stub.py --help`` (the demo animals are in ``data/pets.json``).

In tests: the pytest fixtures ``petstore_server`` and ``petstore_app``, or ``serve()``, which
starts a ``StubServer`` on a free loopback port (``help(petstore_stub.StubServer)``)::

    with serve() as server:
        server.add_pet('Rex', 1)
        server.fail_next(503)               # the next call answers 503; or 'drop', 'slow'...
        server.assert_called('createPet', json={'name': 'Rex', 'categoryId': 1})

The file reads in two parts. Part 1, which uses nothing from part 2, is ``create_app()``, the plain
API over a ``PetStore``, a dict of pets behind a lock. Part 2 wraps it: ``create_stub()`` adds the
fixture server's pieces, and ``StubStore`` the durable file. The sections, in order, each with its
first definition, which a search for ``def`` or ``class`` and the name finds:

    Part 1: the Pet Store API, as a student meets it
      Constants  (API_VERSION)
      ApiError: the one exception, and the Error body  (ApiError)
      Validation: pure functions from raw input to clean values  (bad_parameter)
      The bearer check  (check_bearer)
      The app: the four operations  (create_app)
      The store the operations use  (Change)
    Part 2: the machinery
      Durable storage: the TinyDB file, its log, and group commit  (DatabaseError)
      The fixture server: StubApp, and one path for every request  (Exchange)
      The path's steps, in the order a request takes them  (is_admin_call)
      Faults and delays  (Faults)
      The documents, the admin endpoints, the fixtures  (add_documents)
      Assertions: what the client sent, held against what a test expects  (call_report)
      The console: text for a person, never in the way of a request  (Console)
      HTTPS: a certificate a test can trust  (Tls)
      The server: HTTP/1.1 on httptools, a thread for each connection  (ServerError)
      The command line  (build_parser)
      The pytest fixtures  (petstore_api_key)
"""

from __future__ import annotations

import argparse
import base64
import collections
import contextlib
import dataclasses
import errno
import functools
import hashlib
import hmac
import http.client
import io
import ipaddress
import itertools
import json
import math
import operator
import os
import queue
import re
import secrets
import shlex
import signal
import socket
import ssl
import stat
import struct
import sys
import tempfile
import threading
import time
import traceback
import types
import urllib.parse
import warnings
import wsgiref.handlers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

import bottle
import httptools
from tinydb.storages import Storage

__all__ = [
    'ApiError', 'Console', 'DatabaseError', 'DurableTable', 'Including', 'LockedJSONStorage',
    'PetStore', 'ServerError', 'StubApp', 'StubServer', 'StubStore', 'add_fixtures', 'create_app',
    'create_stub', 'main', 'parse_limit', 'parse_new_pet', 'parse_pet_id', 'parse_status',
    'read_fixtures', 'serve']

__version__ = '6.0.0'


# =============================================================================
# Part 1: the Pet Store API, as a student meets it
# =============================================================================

# -- Constants -----------------------------------------------------------------
# A comment that starts with #:, above a name or beside it, says what the name holds (for tools).

API_VERSION = '1.0.0'
BASE_PATH = '/v1'
STAGING_BASE_PATH = '/staging/v1'

PET_STATUSES = ('available', 'pending', 'sold')
NEW_PET_FIELDS = ('name', 'categoryId', 'status')
LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT = 1, 100, 20
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
#: The spec sets no size limit. A NewPet is tiny, so a megabyte is plenty.
MAX_BODY_BYTES = 1024 * 1024

#: The README publishes this key, so part 2's command line accepts it only on loopback.
DEMO_API_KEY = 'petstore-demo-key'
#: The characters a bearer token may hold (RFC 6750 calls such a token a b64token).
TOKEN_PATTERN = re.compile(r'[A-Za-z0-9\-._~+/]+=*')
REALM = 'petstore'

#: getPet is deprecated (RFC 9745) and goes away on 5 December 2030 (RFC 8594). The spec gives no
#: date for the deprecation: 1 January 2026 stands in, in Unix time (seconds since 1970).
DEPRECATED_SINCE = 1767225600
SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT'


# -- ApiError: the one exception, and the Error body ---------------------------

class ApiError(bottle.HTTPError):
    """Raised anywhere to answer with the spec's Error body, which is made here only. As a bottle
    HTTPError, it stops the request where it is raised and goes to the app's error handler."""

    def __init__(self, status: int, code: str, message: str,
                 headers: Mapping[str, str] | None = None,
                 details: Mapping[str, Any] | None = None) -> None:
        # ``details`` are fields that part 2's admin API adds to the spec's three. A password a
        # client sent in a URL (http://user:password@host/, its "userinfo") is never sent back.
        message = without_userinfo(message, in_quotes=True)
        body = to_json({'code': code, 'message': message, 'status': status, **(details or {})})
        super().__init__(status, body, headers=dict(headers or {}))
        self.content_type = 'application/json'
        self.code, self.message = code, message

    def __str__(self) -> str:
        return f'{self.status_code} {self.code}: {self.message}'


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) + '\n'  # The newline ends curl's output.


def render_error(error: bottle.HTTPError) -> str:
    """The app's error handler: every error bottle sends passes here, as an ApiError."""
    error = as_api_error(error)
    error.apply(bottle.response)
    return error.body


def as_api_error(error: bottle.HTTPError) -> ApiError:
    """An ApiError as it is; bottle's own errors (no route, a wrong method, a crash) as one."""
    if isinstance(error, ApiError):
        return error
    if error.status_code == 500:  # A crash: bottle has written its traceback to the log.
        return stub_failed()
    path = printable(without_userinfo(bottle.request.environ['bottle.raw_path']))
    allow = error.get_header('Allow')
    base = bottle.request.app.config.get('petstore.base_path', '')
    elsewhere = '' if path.startswith(base + '/') else f'; the API is under {base}'
    messages = {404: f'nothing is at {path}{elsewhere}',
                405: f'{bottle.request.method} is not allowed on {path}; use {allow}'}
    headers = {'Allow': allow} if allow else None  # A 405 says which methods the path takes.
    return ApiError(error.status_code, error_code_name(error.status_code),
                    messages.get(error.status_code, str(error.body)), headers)


def stub_failed() -> ApiError:
    return ApiError(500, 'internal_error', 'the stub failed here; its log has the traceback')


#: The Error ``code`` of a status that http.client names otherwise (part 2 sends most of them).
ERROR_CODES = {413: 'payload_too_large', 431: 'header_too_large', 500: 'internal_error',
               # These three are named as RFC 9110 names them. Python names them so from 3.13.
               414: 'uri_too_long', 416: 'range_not_satisfiable', 422: 'unprocessable_content'}


def error_code_name(status: int) -> str:
    """The Error ``code`` of a status no handler named: ``bad_request``, ``bad_gateway``..."""
    phrase = ERROR_CODES.get(status) or http.client.responses.get(status, f'http {status}')
    return re.sub(r'[^a-z0-9]+', '_', phrase.lower())  # "I'm a Teapot" is i_m_a_teapot.


def without_userinfo(text: str, in_quotes: bool = False) -> str:
    """Text a client sent, with each user:password@ in it masked (the @ may be written %40). In a
    message that quotes the text (``in_quotes``), a space or a quote ends a part too."""
    if '@' not in text and '%40' not in text:  # Most text has neither, so this is quick.
        return text
    part = r'[^\s\'"/?#@]' if in_quotes else r'[^/?#@]'
    # A match starts only where a part starts (else a part with no @ is tried from each of its
    # characters, in time that grows as the square), and a part already masked is left as it is.
    return re.sub(rf'(?<!{part}){part}*(?<!<redacted>)(@|%40)', r'<redacted>\1', text)


def quoted(raw: str, size: int = 40) -> str:
    """A value the client sent, as an error quotes it: a user:password@ masked, then cut."""
    return repr(without_userinfo(raw)[:size])


def printable(text: str) -> str:
    """Every character outside printable ASCII escaped: no forged line, no terminal escape."""
    if text.isascii() and text.isprintable():
        return text
    return ''.join(c if ' ' <= c <= '~' else f'\\x{ord(c):02x}' if ord(c) < 0x100
                   else f'\\u{ord(c):04x}' for c in text)


# -- Validation: pure functions from raw input to clean values -----------------

def bad_parameter(message: str) -> ApiError:
    return ApiError(400, 'invalid_parameter', message)


def bad_body(message: str) -> ApiError:
    return ApiError(400, 'invalid_body', message)


def parse_whole_number(raw: str, signed: bool = False) -> int | None:
    """Decimal digits, after a ``-`` if ``signed`` -> their value; None for anything else. This is
    the one rule for every number a client writes in a URL. Leading zeros change nothing. A ``+``,
    a space or a digit such as the Arabic-Indic ``١`` is no number here, though int() takes each."""
    negative = signed and raw.startswith('-')
    digits = raw[1:] if negative else raw
    significant = digits.lstrip('0')
    # More than 19 significant digits is past int64, and int() of many digits is slow.
    if not digits.isascii() or not digits.isdigit() or len(significant) > 19:
        return None
    value = int(significant or '0')
    return -value if negative else value


def parse_limit(raw: str | None) -> int:
    """Check ``limit`` as sent: a whole number from 1 to 100. Without one, the limit is 20."""
    if raw is None:
        return LIMIT_DEFAULT
    limit = parse_whole_number(raw)
    if limit is None or not LIMIT_MIN <= limit <= LIMIT_MAX:
        raise bad_parameter(
            f'limit must be a whole number from {LIMIT_MIN} to {LIMIT_MAX}; got {quoted(raw)}')
    return limit


def parse_status(raw: str | None) -> str | None:
    """Check ``status`` as sent: one of PET_STATUSES. Without one, no status is asked for."""
    if raw is None or raw in PET_STATUSES:
        return raw
    raise bad_parameter(f'status must be one of {", ".join(PET_STATUSES)}; got {quoted(raw)}')


def parse_query(query_string: str) -> dict[str, list[str]]:
    """Read the query string (percent-encoded, as WSGI gives it) into each name's values."""
    query: dict[str, list[str]] = {}
    # WSGI (PEP 3333) hands the app a request's bytes as text, a Latin-1 character for each byte.
    # Percent-decoding as Latin-1 keeps a byte a character, and utf8() reads the bytes as UTF-8:
    # it refuses bad bytes, which parse_qsl's own UTF-8 would let through as '\ufffd' marks.
    pairs = urllib.parse.parse_qsl(query_string, keep_blank_values=True, encoding='latin-1')
    try:
        for name, value in pairs:
            query.setdefault(utf8(name), []).append(utf8(value))
    except UnicodeDecodeError:
        raise bad_parameter('the query string is not UTF-8 once percent-decoded') from None
    return query


def utf8(text: str) -> str:
    """Bytes carried as Latin-1 text (as WSGI carries them) -> the UTF-8 text they hold."""
    return text.encode('latin-1').decode('utf-8')


def parse_list_query(query: Mapping[str, list[str]]) -> dict[str, Any]:
    """Check the query of listPets, and return ``{'limit': int, 'status': str | None}``. A client
    that sends ``limt``, or ``limit`` twice, should learn it here, not in production."""
    check_query_names(query, 'listPets', ('limit', 'status'))
    for name, values in query.items():
        if len(values) > 1:
            raise bad_parameter(f'{name} was given {len(values)} times; give it once')
    single = {name: values[0] for name, values in query.items()}
    return {'limit': parse_limit(single.get('limit')), 'status': parse_status(single.get('status'))}


def check_query_names(query: Mapping[str, list[str]], operation: str,
                      names: Sequence[str] = ()) -> None:
    """Refuse a query parameter ``operation`` does not accept: getPet and createPet accept none."""
    unknown = sorted(set(query) - set(names))
    if unknown:
        takes = f'takes {" and ".join(names)} only' if names else 'takes no query parameters'
        raise bad_parameter(f'unknown query parameter {quoted(unknown[0])}; {operation} {takes}')


def parse_pet_id(raw: str) -> int:
    """Check ``petId`` from the path: an int64. Zero and negative ids are accepted, and then not
    found (a 404), as the spec allows any int64."""
    pet_id = parse_whole_number(raw, signed=True)
    if pet_id is None or not INT64_MIN <= pet_id <= INT64_MAX:
        raise bad_parameter(f'petId must be an int64 integer; got {quoted(raw)}')
    return pet_id


def check_content_type(content_type: str) -> None:
    """Accept only ``application/json`` in UTF-8, JSON's one charset (text encoding); else 415."""
    media_type, *parameters = [part.strip().lower() for part in content_type.split(';')]
    charsets = [p.partition('=')[2].strip('"') for p in parameters if p.startswith('charset=')]
    if media_type != 'application/json' or any(c != 'utf-8' for c in charsets):
        got = f'got {quoted(content_type, 60)}' if content_type else 'got no Content-Type'
        raise ApiError(415, 'unsupported_media_type',
                       f'send the body as Content-Type: application/json; {got}')


def read_body(request: bottle.BaseRequest, what: str = 'a NewPet') -> bytes:
    """Read the request body, up to MAX_BODY_BYTES, or answer 413: the most ``what`` may take."""
    # A body sent in chunks has no Content-Length, so the body itself is read too: a byte more than
    # the limit tells that it is too long. ``with`` closes the file bottle keeps a large body in.
    if request.content_length <= MAX_BODY_BYTES:
        with request.body as body:
            raw = body.read(MAX_BODY_BYTES + 1)
        if len(raw) <= MAX_BODY_BYTES:
            return raw
    raise ApiError(413, 'payload_too_large',
                   f'the body is over {MAX_BODY_BYTES} bytes, the most {what} may take')


def parse_json_object(body: bytes, what: str = 'a NewPet JSON object') -> dict:
    """Read the raw request body as a JSON object (``what`` the operation takes), else 400."""
    if not body.strip():
        raise bad_body(f'the request body is empty; send {what}')
    try:
        value = loads_strict(body.decode('utf-8'))
    except UnicodeDecodeError:
        raise bad_body('the request body is not UTF-8') from None
    except ValueError as error:
        raise bad_body(f'the request body is not valid JSON: {error}') from None
    if not isinstance(value, dict):
        kind = {list: 'an array', str: 'a string', bool: 'true or false', type(None): 'null'}.get(
            type(value), 'a number')
        raise bad_body(f'the request body must be a JSON object, not {kind}')
    return value


def loads_strict(text: str) -> Any:
    """``json.loads``, but a key that comes twice, NaN, Infinity, a number too large for a double
    (1e999, which Python reads as infinity) and nesting too deep are each a ValueError."""
    try:
        return json.loads(text, object_pairs_hook=reject_duplicate_keys,
                          parse_constant=finite, parse_float=finite, parse_int=finite)
    except RecursionError:
        raise ValueError('it is nested too deeply') from None


def finite(text: str) -> int | float:
    """A JSON number (digits alone are an int), refused if a 64-bit double cannot hold it, as a
    client may read every number as one. NaN and Infinity, which JSON lacks, are refused too."""
    if text in ('NaN', 'Infinity', '-Infinity'):
        raise ValueError(f'{text} is not a JSON value')
    number = float(text)
    if math.isinf(number):
        raise ValueError(f'{text[:40]} is too large for a number (a 64-bit double)')
    return int(text) if text.lstrip('-').isdigit() else number


def reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    """Make a JSON object's pairs a dict, or raise a ValueError naming a key that comes twice."""
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f'the key {key!r} appears twice')
        seen.add(key)
    return dict(pairs)


def parse_new_pet(document: Any) -> dict:
    """Check a decoded NewPet (a body's or a fixture's); return a clean copy in the spec's order."""
    if not isinstance(document, dict):
        raise bad_body(f'a NewPet is a JSON object, not {json.dumps(document)[:40]}')
    unknown = [field for field in document if field not in NEW_PET_FIELDS]
    if unknown:
        raise bad_body(f'unknown field {unknown[0]!r}; a NewPet has name, categoryId and status')
    for field in ('name', 'categoryId'):
        if field not in document:
            raise bad_body(f'{field} is required')
    name, category_id = document['name'], document['categoryId']
    if not isinstance(name, str) or not name:
        raise bad_body(f'name must be a non-empty string; got {json.dumps(name)[:40]}')
    # JSON may write half of a UTF-16 pair alone ("\\ud800"). That is no character: refuse it.
    if re.search(r'[\ud800-\udfff]', name):
        raise bad_body('name holds an unpaired surrogate; it must be valid Unicode')
    # type() and not isinstance(): True and False are ints in Python, and no categoryId.
    if type(category_id) is not int or not INT64_MIN <= category_id <= INT64_MAX:
        raise bad_body(f'categoryId must be an int64 integer; got {json.dumps(category_id)[:40]}')
    new_pet = {'name': name, 'categoryId': category_id}
    if 'status' in document:
        if document['status'] not in PET_STATUSES:
            raise bad_body(f'status must be one of {", ".join(PET_STATUSES)}; '
                           f'got {json.dumps(document["status"])[:40]}')
        new_pet['status'] = document['status']
    return new_pet


# -- The bearer check ----------------------------------------------------------

def check_bearer(authorization: str | None, api_keys: Sequence[str]) -> None:
    """Raise 401 unless ``authorization`` is ``Bearer <one of api_keys>`` (RFC 6750, section 3)."""
    # HTTP counts only space and tab as white space. str.strip() would also take \xa0 or \x85.
    scheme, _, token = (authorization or '').strip(' \t').partition(' ')
    token = token.strip(' \t')
    if scheme.lower() != 'bearer' or not token:
        raise ApiError(401, 'unauthorized', 'send the API key as Authorization: Bearer <key>',
                       {'WWW-Authenticate': f'Bearer realm="{REALM}"'})
    # == stops at the first character that differs, so a client timing the answers could guess a
    # key one character at a time; hmac.compare_digest() takes as long whatever differs, for every
    # key. It compares ASCII text only, and no key has other characters: such a token is refused.
    matches = []
    if TOKEN_PATTERN.fullmatch(token):
        matches = [hmac.compare_digest(token, key) for key in api_keys]
    if not any(matches):
        raise ApiError(401, 'invalid_token', 'the API key is not valid',
                       {'WWW-Authenticate': f'Bearer realm="{REALM}", error="invalid_token"'})


# -- The app: the four operations ----------------------------------------------

def create_app(store: PetStore | None = None, api_keys: Sequence[str] = (DEMO_API_KEY,),
               base_path: str = BASE_PATH, public_paths: Iterable[str] = (),
               error_handler: Callable[[bottle.HTTPError], str] = render_error) -> bottle.Bottle:
    """The Pet Store API as a WSGI app, over ``store`` (a new one in memory by default), taking the
    bearer keys ``api_keys``, under ``base_path`` (``/v1`` or ``/staging/v1``). Part 2's fixture
    server gives it ``public_paths``, which a client may fetch (GET or HEAD) without a key, and its
    own ``error_handler``, so that every answer leaves part 2 by one way."""
    store = PetStore() if store is None else store
    api = bottle.Bottle()
    api.config['petstore.base_path'] = base_path  # A 404 off the base path names it.
    public_paths = set(public_paths)

    @api.hook('before_request')
    def check_key() -> None:
        # Before routing, so that a 401 tells nothing of which paths exist. Every answer is JSON.
        bottle.response.content_type = 'application/json'
        request = bottle.request
        if not (request.method in ('GET', 'HEAD') and request.environ['PATH_INFO'] in public_paths):
            check_bearer(request.environ.get('HTTP_AUTHORIZATION'), api_keys)

    @api.get(f'{base_path}/pets', name='listPets')
    def list_pets() -> str:
        query = parse_list_query(parse_query(bottle.request.query_string))
        return store.list_json(query['limit'], query['status']) + '\n'

    @api.post(f'{base_path}/pets', name='createPet')
    def create_pet() -> str:
        check_query_names(parse_query(bottle.request.query_string), 'createPet')
        check_content_type(bottle.request.content_type)
        document = parse_json_object(read_body(bottle.request))
        pet = store.add(parse_new_pet(document))
        bottle.response.status = 201
        bottle.response.set_header('Location', f'{mount_point()}{base_path}/pets/{pet["id"]}')
        return to_json(pet)

    @api.get(f'{base_path}/pets/<pet_id>', name='getPet')
    def get_pet(pet_id: str) -> str:
        check_query_names(parse_query(bottle.request.query_string), 'getPet')
        number = parse_pet_id(pet_id)
        pet = store.get_json(number)
        if pet is None:
            raise ApiError(404, 'not_found', f'no pet has id {number}')
        bottle.response.set_header('Deprecation', f'@{DEPRECATED_SINCE}')
        bottle.response.set_header('Sunset', SUNSET)
        bottle.response.set_header('Link',
                                   f'<{mount_point()}{base_path}/pets>; rel="successor-version"')
        return pet + '\n'

    @api.get(f'{base_path}/store/orders', name='listOrders')
    def list_orders() -> str:
        raise ApiError(501, 'not_implemented', 'the store-orders operation is named by the spec '
                       'but not described; the stub does not serve it')

    api.default_error_handler = error_handler
    return api


def mount_point() -> str:
    """Where the app is mounted: empty, unless a WSGI server serves it under a prefix."""
    return bottle.request.script_name.rstrip('/')


# -- The store the operations use ----------------------------------------------
# Like TinyDB, the store keeps documents by id in named tables, and knows nothing of the operations.
# A change puts documents at their ids, removes ids (the DELETE exercise does), or writes a table:
# it empties the table, then puts. Each thing PetStore does is one change; part 2 writes it to disk.

PETS_TABLE = 'pets'


class Change(NamedTuple):
    """A change to a table: ``put`` documents at ids, ``remove`` ids, or ``write`` the table."""
    kind: str
    table: str
    documents: dict[int, Any]  #: A document at each id; for a 'remove', None at each id.


class Tables:
    """Documents by id in named tables, and each table's last id: the largest id it has held since
    a 'write' (a reset) last emptied it. New ids go after it, so none is given twice."""

    def __init__(self, tables: dict[str, dict], last_ids: dict[str, int]) -> None:
        self.tables = tables  #: Each table's documents, by id.
        self.last_ids = last_ids  #: Each table's last id.

    def apply(self, change: Change) -> None:
        table = self.tables.setdefault(change.table, {})
        if change.kind == 'remove':
            for doc_id in change.documents:
                table.pop(doc_id, None)
            return
        if change.kind == 'write':  # Empty the table, then put the documents, as a 'put' does.
            table.clear()  # The store's readers hold this dict, so it is emptied, not replaced.
            self.last_ids[change.table] = 0
        table.update(change.documents)
        last_id = max(self.last_ids.get(change.table, 0), max(change.documents, default=0))
        self.last_ids[change.table] = last_id


class PetStore:
    """What a pet store does, as changes to ``Tables`` in memory, made one at a time under a lock
    that reads take too. Ids only grow, and a dict keeps its keys' order: pets are in id order."""

    def __init__(self, first_id: int = 1) -> None:
        if type(first_id) is not int or not 1 <= first_id <= INT64_MAX:
            raise ValueError(f'the first id is a whole number from 1 to {INT64_MAX}; got '
                             f'{first_id!r}')
        self.first_id = first_id
        self._lock = threading.Lock()
        self._tables = Tables({PETS_TABLE: {}}, {PETS_TABLE: 0})
        self._pets = self._tables.tables[PETS_TABLE]  #: Each pet's document, by its id.

    def change(self, transaction: Callable[[Tables], Change]) -> Change:
        """Make the change ``transaction`` returns, given the tables to read; to refuse, it raises
        an ApiError, and nothing changes. It is a function, so that it reads the tables at its turn,
        when no other change can come between. (Part 2 writes each change to disk first.)"""
        with self._lock:
            change = transaction(self._tables)
            self._tables.apply(change)
        return change

    def add(self, new_pet: Mapping[str, Any]) -> dict:
        """Store a validated NewPet; return the Pet, with its new id."""
        return self.add_many([new_pet])[0]

    def add_many(self, new_pets: Sequence[Mapping[str, Any]]) -> list[dict]:
        """Store validated NewPets in one change; return them as Pets, with their ids."""
        change = self.change(lambda tables: self.put_new(tables, new_pets))
        return [{'id': pet_id, **pet} for pet_id, pet in change.documents.items()]

    def put_new(self, tables: Tables, new_pets: Sequence[Mapping[str, Any]]) -> Change:
        """The change that puts new pets by the id rule: they take the ids after the table's last
        id, and none below the first id, so no id is given twice, not even a removed pet's."""
        last = max(tables.last_ids[PETS_TABLE], self.first_id - 1)
        if last + len(new_pets) > INT64_MAX:
            raise ApiError(507, 'ids_exhausted', f'every pet id up to {INT64_MAX} (int64) is '
                                                 'taken; the store can take no more pets')
        return Change('put', PETS_TABLE, {last + n: dict(pet)
                                          for n, pet in enumerate(new_pets, start=1)})

    def list_json(self, limit: int, status: str | None = None) -> str:
        """The first ``limit`` pets by id, of ``status`` if given: the JSON array listPets sends."""
        with self._lock:
            pets: Iterable[tuple[int, dict]] = self._pets.items()
            if status is not None:
                pets = (item for item in pets if item[1].get('status') == status)
            # islice() stops the scan at ``limit`` matches, so a page of many pets is quick.
            return f'[{", ".join(self.pet_json(*item) for item in itertools.islice(pets, limit))}]'

    def get_json(self, pet_id: int) -> str | None:
        """The pet as the JSON object getPet sends, or None."""
        with self._lock:
            pet = self._pets.get(pet_id)  # One dict lookup, however many pets there are.
            return None if pet is None else self.pet_json(pet_id, pet)

    def pet_json(self, pet_id: int, document: dict) -> str:
        """A pet as JSON text. Part 2's store keeps this text for each pet, made once."""
        return json.dumps({'id': pet_id, **document}, ensure_ascii=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._pets)

    def reset(self) -> None:
        """Remove every pet; ids start again at the first id."""
        self.change(lambda tables: Change('write', PETS_TABLE, {}))


# =============================================================================
# Part 2: the machinery. A first read may stop here.
# =============================================================================

# -- Durable storage: the TinyDB file, its log, and group commit ---------------
# A TinyDB file and ``<file>.log``, a JSON line a Change since the last fold (``{"put": {"pets":
# {"14": {...}}}}``, ``remove``, ``write``), seen once on disk. A fold writes the file crash-safely,
# then empties the log; a line sets what it names, so a log replayed over a file holding it changes
# nothing. One stub per database: the file is locked through any name, the log at its path.

O_DSYNC = getattr(os, 'O_DSYNC', 0)  #: (Linux, macOS) one system call puts a log line on disk
FORMAT = 2  #: the file's format; 2 keeps the last ids in a table of its own, 1 had none
META_TABLE = '_petstore'  #: {"1": {"format": 2, "last_ids": {"pets": 14}}}


class DatabaseError(Exception):
    """The database file cannot be used; the stub refuses to start."""


class LockedJSONStorage(Storage):
    """A locked TinyDB storage; ``write()`` replaces the file atomically or raises OSError."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.name = Path(path)  #: as given, for messages
        self.path = Path(os.path.realpath(path))  # a rename replaces the file, not a link to it
        self._descriptor = open_locked(self.path, self.name, os.O_RDONLY)
        self._linked: list[int] = []  #: files a fold replaced that a hard link still names: locked

    def size(self) -> int:
        return os.fstat(self._descriptor).st_size

    def is_in_place(self) -> bool:
        return is_at(self._descriptor, self.path)

    def read(self) -> dict[str, dict[str, Any]] | None:
        try:
            text = self.path.read_bytes().decode('utf-8')
            if not text.strip():
                return None
            tables = loads_strict(text)
        except (OSError, ValueError) as error:
            raise DatabaseError(f'{self.name}: not a readable JSON file ({error})') from None
        if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
            raise DatabaseError(f'{self.name}: not a TinyDB file (expected an object of tables)')
        return tables

    def write(self, data: dict[str, dict]) -> None:
        temporary = self.path.with_name(f'.{self.path.name}.tmp')
        mode = stat.S_IMODE(os.fstat(self._descriptor).st_mode)
        temporary.unlink(missing_ok=True)  # left by a crash, perhaps read-only
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            os.fchmod(descriptor, mode)  # as it was, whatever the umask
            write_all(descriptor, to_json(data).encode('utf-8'))
            os.fsync(descriptor)
            lock_file(descriptor, self.name)  # the new file is locked before anyone can open it
            os.replace(temporary, self.path)
        except BaseException:
            os.close(descriptor)
            temporary.unlink(missing_ok=True)
            raise
        if os.fstat(self._descriptor).st_nlink:  # a hard link made before: no stub starts on it
            self._linked.append(self._descriptor)
        else:
            os.close(self._descriptor)  # the old file, and its lock, are gone
        self._descriptor = descriptor
        folder = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)  # the rename, on disk
        finally:
            os.close(folder)

    def close(self) -> None:
        for descriptor in self._linked:
            os.close(descriptor)
        if self._descriptor >= 0:
            os.close(self._descriptor)
            self._descriptor = -1


def open_locked(path: Path, name: Path, flags: int) -> int:
    while True:
        try:
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISREG(os.stat(path).st_mode):  # a fold would replace a device
                    raise DatabaseError(f'{name}: not a regular file; choose a file for --db, or '
                                        '--db :memory: to keep nothing')
            descriptor = os.open(path, flags | os.O_CREAT, 0o666)
        except OSError as error:
            raise DatabaseError(f'{name}: cannot use this database ({error.strerror}); choose '
                                'another --db, or --db :memory: to keep nothing') from None
        try:
            lock_file(descriptor, name)
            if is_at(descriptor, path):  # else its last holder replaced it (a fold) or removed it
                return descriptor
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)


def lock_file(descriptor: int, name: Path) -> None:
    with contextlib.suppress(ImportError):  # Windows: no advisory locks to take
        import fcntl
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DatabaseError(f'{name}: another stub is using this database; give each stub '
                                'its own file, or :memory:') from None


def is_at(descriptor: int, path: Path) -> bool:
    with contextlib.suppress(FileNotFoundError):
        return os.path.samestat(os.fstat(descriptor), os.stat(path))
    return False


def write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


def append_durably(descriptor: int, data: bytes) -> None:
    write_all(descriptor, data)
    if not O_DSYNC:
        os.fsync(descriptor)


def stored_tables(name: Path, tables: dict[str, dict[str, Any]]) -> Tables:
    """The tables a file holds, refused if the file is of a format this stub cannot read."""
    meta = tables.pop(META_TABLE, {}).get('1', {})
    version, last_ids = (meta.get('format', 1), meta.get('last_ids', {})) if isinstance(
        meta, dict) else (meta, {})
    if not is_whole(version, 1) or version > FORMAT:
        raise DatabaseError(f'{name}: file format {brief(version)}; petstore-stub {__version__} '
                            f'reads formats 1 to {FORMAT}: upgrade it, or choose another --db')
    if not (isinstance(last_ids, dict) and all(is_whole(n) and n <= INT64_MAX
                                               for n in last_ids.values())):
        raise DatabaseError(f'{name}: its last ids, in {META_TABLE}, are not whole int64s')
    try:
        stored = {PETS_TABLE: {}, **{table: doc_ids(table, docs) for table, docs in tables.items()}}
    except ValueError as error:
        raise DatabaseError(f'{name}: {error}') from None
    # A table's last id is at least its largest id: a file of format 1 has no last ids.
    return Tables(stored, {table: max(last_ids.get(table, 0), max(documents, default=0))
                           for table, documents in stored.items()})


def copy_tables(tables: Tables) -> Tables:
    """A copy of ``tables``: new dicts of the same documents."""
    return Tables({name: dict(table) for name, table in tables.tables.items()},
                  dict(tables.last_ids))


def doc_ids(table: str, documents: dict[str, Any], put: bool = True) -> dict[int, Any]:
    """The documents by int id, checked: each id a positive int64, each pet ``put`` a valid one."""
    for doc_id, document in documents.items():
        if not re.fullmatch(r'[1-9][0-9]{0,18}', doc_id) or int(doc_id) > INT64_MAX:
            raise ValueError(f'the id {doc_id[:40]!r} in {table} is not a positive int64')
        try:
            if put and table == PETS_TABLE:
                parse_new_pet(document)
        except ApiError as error:
            raise ValueError(f'pet {doc_id} is not a valid pet ({error.message})') from None
    return dict(sorted((int(doc_id), document) for doc_id, document in documents.items()))


def replay_log(path: Path, tables: Tables) -> Tables:
    try:
        lines = path.read_bytes().split(b'\n')[:-1]  # a last line cut by a crash was never answered
    except OSError as error:
        raise DatabaseError(f'{path}: cannot read the log ({error.strerror})') from None
    for number, line in enumerate(lines, start=1):
        try:
            for change in logged_changes(loads_strict(line.decode('utf-8'))):
                tables.apply(change)
        except (ValueError, TypeError, AttributeError) as error:
            raise DatabaseError(f'{path}: line {number} is not a logged change ({error})') from None
    return tables


def logged_changes(line: Any) -> list[Change]:
    (kind, tables), = line.items()
    if kind not in ('put', 'remove', 'write', 'insert'):  # format 1 named a put an insert
        raise ValueError(f'unknown change {kind!r}')
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise ValueError(f'its {kind} is not an object of tables, each an object')
    kind = kind.replace('insert', 'put')
    return [Change(kind, table, doc_ids(table, documents, kind != 'remove'))
            for table, documents in tables.items()]


class DurableTable:
    """Tables in a TinyDB file and its log, under the store's ``lock``, changed by group commit."""

    def __init__(self, path: str | os.PathLike, lock: threading.Lock, *,
                 checkpoint_lines: int = 1000) -> None:
        self._lock = lock  #: the store's: guards the readers' tables and the queued changes
        self._checkpoint_lines = checkpoint_lines
        self._queue = threading.Lock()  #: guards the two below
        self._batch: list[types.SimpleNamespace] = []  #: the changes queued, not yet taken
        self._writing = False  #: whether a thread is writing, or handed the next write
        self._writer = threading.Lock()  #: held by the thread that writes
        self._log_lines = self._log_size = 0
        existed = os.path.exists(path)
        self._storage = LockedJSONStorage(path)
        self.log_path = self._storage.path.with_name(f'{self._storage.path.name}.log')
        self._log = -1
        try:
            stored = stored_tables(self._storage.name, self._storage.read() or {})  # opens nothing
            self._log = open_locked(self.log_path, self.log_path,
                                    os.O_WRONLY | os.O_APPEND | O_DSYNC)
            name, logged = self._storage.name, os.fstat(self._log).st_size
            if logged and not self._storage.size():
                raise DatabaseError(f'{self.log_path}: the log holds changes but the database '
                                    f'{name} is empty or missing, so pets were lost; restore the '
                                    'database, or remove the log to start with what is left')
            self._next = replay_log(self.log_path, stored) if logged else stored  #: the writer's
            self.tables = copy_tables(self._next)  #: the readers': on disk
            #: The log's length that the next fold waits for: as many lines as the file holds
            #: documents (so each costs little), or after a fold found no room, twice the log.
            self._fold_at = max(checkpoint_lines, sum(map(len, stored.tables.values())))
            if logged or not self._storage.size():  # an empty file with a log shows a loss
                try:
                    self._checkpoint()
                except OSError as error:
                    raise DatabaseError(f'{name}: cannot fold the log into the database '
                                        f'({error.strerror}); nothing was changed') from None
        except BaseException:  # close both files, and remove what this open made and left empty
            if self._log >= 0:
                if not os.fstat(self._log).st_size:
                    self.log_path.unlink(missing_ok=True)
                os.close(self._log)
            if not existed and not self._storage.size() and self._storage.is_in_place():
                self._storage.path.unlink()
            self._storage.close()
            raise

    def make(self, transaction: Callable[[Tables], Change]) -> Change:
        """Make the change, and return it once it is on disk; else raise what refused it. The first
        thread to queue a change while none writes is the writer. Each other thread wakes once:
        when its change is written, or when it is handed the next write."""
        commit = types.SimpleNamespace(transaction=transaction, change=None, failure=None,
                                       woken=threading.Lock())
        commit.woken.acquire()  # released once, by the writer
        with self._queue:
            self._batch.append(commit)
            commit.writes, self._writing = not self._writing, True
        if not commit.writes:
            commit.woken.acquire()
        if commit.writes:  # from the start, or handed the write
            with self._writer:
                self._write_next_batch()
        if commit.failure is not None:
            raise commit.failure
        return commit.change

    def _write_next_batch(self) -> None:
        with self._queue:
            batch, self._batch = self._batch, []
        made = []
        try:
            for commit in batch:  # the writer alone changes the tables
                try:
                    commit.change = commit.transaction(self._next)
                    self._next.apply(commit.change)
                    made.append(commit)
                except Exception as error:  # refused (an ApiError), or a bug: its request's alone
                    commit.failure = error
            if self._log_lines >= self._fold_at:
                try:
                    self._checkpoint()
                except OSError:  # no room for a new file: the log takes the changes, and waits
                    self._fold_at = 2 * self._log_lines
                    self._append([commit.change for commit in made])
            else:
                self._append([commit.change for commit in made])
        except BaseException as error:  # none of the batch is made: a 500, or a bug's traceback
            self._next = copy_tables(self.tables)
            for commit in made:
                commit.failure = ApiError(500, 'storage_error', f'could not write {self.log_path}: '
                                          f'{error.strerror}; nothing was changed'
                                          ) if isinstance(error, OSError) else stub_failed()
            if not isinstance(error, OSError):
                raise
        else:
            with self._lock:
                for commit in made:
                    self.tables.apply(commit.change)
        finally:  # none waits for ever
            with self._queue:
                self._writing = bool(self._batch)
                if self._writing:  # the first to queue meanwhile writes next
                    self._batch[0].writes = True
                    self._batch[0].woken.release()
            for commit in batch:
                if not commit.writes:  # the writer's own is this thread's
                    commit.woken.release()

    def _append(self, changes: list[Change]) -> None:
        data = ''.join(json.dumps({change.kind: {change.table: change.documents}},
                                  ensure_ascii=False) + '\n' for change in changes).encode()
        if os.fstat(self._log).st_size != self._log_size:
            os.ftruncate(self._log, self._log_size)  # a failed write left part of a line
        try:
            append_durably(self._log, data)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._log, self._log_size)
            raise
        self._log_lines += len(changes)
        self._log_size += len(data)

    def _checkpoint(self) -> None:
        self._storage.write({**self._next.tables, META_TABLE: {
            '1': {'format': FORMAT, 'last_ids': self._next.last_ids}}})
        self._fold_at = max(self._checkpoint_lines, sum(map(len, self._next.tables.values())))
        with contextlib.suppress(OSError):  # a log left as it was replays harmlessly
            os.ftruncate(self._log, 0)
            self._log_lines = self._log_size = 0
            os.fsync(self._log)

    def close(self) -> None:
        """Fold the log into the file and remove it; on failure, keep it and raise DatabaseError."""
        with self._writer:
            if self._log < 0:
                return
            try:
                self._checkpoint()
                if is_at(self._log, self.log_path):  # else moved or removed by hand: left as it is
                    self.log_path.unlink()  # while still locked: no other stub is using it
            except OSError as error:
                raise DatabaseError(f'{self._storage.name}: the log could not be folded in '
                                    f'({error.strerror}); {self.log_path} keeps every pet, '
                                    'and the next start folds it in') from None
            finally:
                os.close(self._log)
                self._log = -1
                self._storage.close()


class StubStore(PetStore):
    """PetStore as the stub runs it: over a ``DurableTable`` given a ``path``. A stored document is
    never changed, only replaced, so its JSON is rendered once, for up to ``rendered_pets`` pets."""

    def __init__(self, path: str | os.PathLike | None = None, *, first_id: int = 1,
                 checkpoint_lines: int = 1000, rendered_pets: int = 10_000) -> None:
        super().__init__(first_id)
        self.path, self._table = None if path is None else Path(path), None
        if path is not None:
            self._table = DurableTable(path, self._lock, checkpoint_lines=checkpoint_lines)
            self._tables = self._table.tables  # the table changes them, under the store's lock
            self._pets = self._tables.tables[PETS_TABLE]
        self._rendered: dict[int, tuple[dict, str]] = {}  #: pet id -> (document, its Pet JSON)
        self._rendered_pets = rendered_pets

    def change(self, transaction: Callable[[Tables], Change]) -> Change:
        return super().change(transaction) if self._table is None else self._table.make(transaction)

    def pet_json(self, pet_id: int, document: dict) -> str:
        rendered = self._rendered.get(pet_id)
        if rendered is None or rendered[0] is not document:  # none yet, or a pet since a reset
            if len(self._rendered) >= self._rendered_pets:
                self._rendered.clear()  # a bound on memory, at the price of rendering again
            rendered = self._rendered[pet_id] = (document, super().pet_json(pet_id, document))
        return rendered[1]

    def close(self) -> None:
        """Fold the log into the file and release it; a store in memory holds nothing."""
        if self._table is not None:
            self._table.close()

    def __enter__(self) -> StubStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# -- The fixture server: StubApp, and one path for every request ---------------
# StubApp serves create_app()'s app, plus documents and admin endpoints, on one path: __call__(),
# like Bottle._handle(). A step that ends a request raises its ApiError or sets Exchange.close.

ADMIN_PREFIX = '/__admin/'
#: operationId -> method: create_app()'s routes, the one list of them, which the rest all read.
OPERATIONS = {route.name: route.method for route in create_app().routes}
#: What a journal entry's ``operation`` may name: an operation, or a document (see add_documents()).
JOURNALLED = (*OPERATIONS, 'index', 'openapi')
JOURNAL_BODY_BYTES, JOURNAL_HEADER_CHARS, JOURNAL_TEXT_CHARS = 4096, 4096, 1024
#: A header or query parameter named as a credential's (not ``Idempotency-Key``, say), any case.
CREDENTIAL = re.compile(r'auth|token|secret|passw(?:or)?d|cookie|session|signature|credential'
                        r'|(?:api|access|private|secret)[-_ .]?key', re.IGNORECASE)
#: The IANA HTTP Authentication Scheme Registry's schemes: what a masked Authorization shows.
AUTH_SCHEMES = ('basic bearer concealed digest dpop gnap hoba mutual negotiate ntlm oauth '
                'privatetoken scram-sha-1 scram-sha-256 vapid').split()
#: How many recorded requests the message of a failed assertion lists, and differences of one.
CALLS_SHOWN, DIFFERENCES_SHOWN = 5, 20
FAULT_KINDS = ('drop', 'reset', 'truncate', 'malformed', 'hang', 'slow')
FAULT_SECONDS = {'hang': 30.0, 'slow': 2.0}  #: what a 'hang' or a 'slow' fault takes unless told
FAULT_SECONDS_MAX = 60.0  #: no fault holds a worker longer
#: Faults queued at most (every request looks through them), and a fault's times or after at most.
FAULTS_QUEUED_MAX, FAULT_COUNT_MAX = 100, 1_000_000
#: What a browser or a code generator may fetch without a key (with GET or HEAD).
FAVICON = '/favicon.ico'
JOURNAL_SIZE = 1000
EXCHANGE = 'petstore_stub.exchange'  #: the WSGI environ key of a request's Exchange
AUTHORITY = 'petstore_stub.authority'  #: an absolute-form target's host, which Host gives way to
#: An answer as WSGI sends it: its status line (``'201 Created'``), its headers, its body.
Answer = tuple[str, list[tuple[str, str]], Iterable[bytes]]
#: A Host header (RFC 3986): a name (``pet_store``, ``ex%41mple``; no comma, which joins a header
#: sent twice) or an IPv6 address in brackets, perhaps with a zone; then perhaps a port, or ``:``.
HOST_PATTERN = re.compile(
    r"(?:[A-Za-z0-9\-._~!$&'()*+;=%]{1,253}"
    r'|\[[0-9A-Fa-f:.]{2,45}(?:%25[A-Za-z0-9\-._~%]{1,64})?\])(?::(?P<port>[0-9]{0,5}))?')
PREFLIGHT_HEADERS = [
    ('Access-Control-Allow-Origin', '*'),
    ('Access-Control-Allow-Methods', ', '.join([*sorted(set(OPERATIONS.values())), 'OPTIONS'])),
    ('Access-Control-Allow-Headers', 'Authorization, Content-Type'),
    ('Access-Control-Max-Age', '600')]
CORS_HEADERS = [('Access-Control-Allow-Origin', '*'), (
    'Access-Control-Expose-Headers', 'Location, Deprecation, Sunset, Link, WWW-Authenticate')]


@dataclasses.dataclass(slots=True, eq=False)
class Exchange:
    """One request and its answer on their way through the fixture server: data only."""

    received: int  #: when its head arrived (time.monotonic_ns())
    refusal: ApiError | None = None  #: the server's Error for a request it could not parse
    can_close: bool = False  #: whether a server can close its connection (not in process)
    operation: str | None = None  #: the route it reached, past the key check
    status: int | None = None  #: the status sent
    error: dict | None = None  #: the code and message of the error sent
    fault: int | str | None = None  #: the fault that fired
    page: bool = False  #: the page was served: a browser's visit, and no call
    close: str | None = None  #: 'dropped' or 'reset': the server closes it unanswered
    hold: float = 0.0  #: the seconds its fault takes: a hang's, once journalled; a slow answer's


class Controls:
    """The test API, alike on a StubApp and the StubServer serving one (with the app's parts)."""

    store: PetStore
    base_path: str
    faults: Faults
    gate: ResetGate
    journal: Journal

    def reset(self) -> None:
        """Empty the store (ids restart at the first id) and the journal; drop faults and delay: a
        clean cut between two tests. A request that arrived before it is let go if held, finished
        if under way, dropped if not yet begun; one arriving while it runs waits; none recorded.
        The store is emptied first: if its file cannot be written, nothing else is changed."""
        with self.gate.cut_off() as cut_at:  # no request is under way in here
            self.store.reset()
            self.journal.clear(cut_at)
            self.faults.clear()
            self.faults.delays.clear()

    def add_pet(self, name: str, categoryId: int, status: str | None = None) -> dict:
        """Add a pet, checked as createPet checks one; return it as a Pet."""
        optional = {} if status is None else {'status': status}
        return self.store.add(parse_new_pet({'name': name, 'categoryId': categoryId, **optional}))

    def load_fixtures(self, path: str | os.PathLike | bool | None = None) -> list[dict]:
        """Add the demo animals (or those in ``path``) to an empty store; return them as Pets."""
        return add_fixtures(self.store, read_fixtures(path))

    def fail_next(self, fault: int | str, times: int = 1, route: str | None = None, *,
                  after: int = 0, retry_after: int | None = None,
                  seconds: float | None = None) -> int:
        """Answer the next ``times`` requests (to ``route``, an operationId, or any), once ``after``
        more have passed, with ``fault``: an error status (with a Retry-After of ``retry_after``
        seconds for a 429 or 503), or one of FAULT_KINDS (``seconds`` for ``hang`` and ``slow``).
        A fault fires after the key is checked. Returns its id, for cancel_fault()."""
        return as_value_error(lambda document: self.faults.add(parse_fault(document, 'None')), {
            'fault': fault, 'times': times, 'route': route, 'after': after,
            'retry_after': retry_after, 'seconds': seconds})['id']

    def cancel_fault(self, fault_id: int) -> None:
        """Unqueue fault ``fault_id``; ValueError if it fired all its times or was cancelled."""
        as_value_error(self.faults.cancel, fault_id)

    @property
    def delay(self) -> float:
        """Seconds added before each call, 0 for none: ``delay = 0.2`` is set_delay(0.2)."""
        return self.faults.delays.get(None, 0.0)

    @delay.setter
    def delay(self, seconds: float) -> None:
        self.set_delay(seconds)

    def set_delay(self, seconds: float, *, route: str | None = None) -> dict:
        """Hold each call (to ``route``, an operationId, if given) once its key is accepted, for
        ``seconds``, at most FAULT_SECONDS_MAX, 0 for none; a route's adds to every call's."""
        delay = as_value_error(parse_delay, {'seconds': seconds, 'route': route}, nothing='None')
        if seconds:
            self.faults.delays[route] = seconds
        else:
            self.faults.delays.pop(route, None)
        return delay

    @property
    def requests(self) -> list[dict]:
        """The journal: the last requests to the API, oldest first (admin calls left out)."""
        return self.journal.entries()

    def unmatched_requests(self) -> list[dict]:
        """The journal's requests no operation answered: no route takes its path and method, or it
        was refused before routing (malformed, foreign Host); a 401 a route would take is not."""
        return [entry for entry in self.requests if entry['unmatched']]

    def assert_called(self, what: str, *, json: Any = None, query: Mapping[str, Any] | None = None,
                      headers: Mapping[str, str] | None = None, times: int | None = None) -> None:
        """Assert that the client sent ``what`` (an operationId, or ``'METHOD /path'``), with this
        body, query and headers where given, ``times`` times if given, else at least once."""
        __tracebackhide__ = True  # pytest shows the message, not the stub's frames
        if report := call_report(self.requests, what, self.base_path, json, query, headers, times):
            raise AssertionError(report[0])

    def assert_not_called(self, what: str) -> None:
        __tracebackhide__ = True
        self.assert_called(what, times=0)

    def find_requests(self, what: str, *, json: Any = None, query: Mapping[str, Any] | None = None,
                      headers: Mapping[str, str] | None = None) -> list[dict]:
        """The journal's entries that assert_called() with these arguments counts, oldest first."""
        return matching_calls(self.requests, what, self.base_path, json, query, headers)

    def coverage(self) -> dict:
        """How often the client met each documented response, fault and deprecated operation since
        the start or clear_coverage(); reset() keeps it, a journal of size 0 counts none."""
        return self.journal.coverage.report()

    def clear_coverage(self) -> None:
        self.journal.coverage.clear()

    def settings(self) -> dict:
        """The stub's delays (route None: every call's), faults queued, journal size."""
        return {'delays': [{'seconds': seconds, 'route': route}
                           for route, seconds in self.faults.delays.items()],
                'faults_queued': len(self.faults.listed()['faults']),
                'journal_size': self.journal.size}


class StubApp(Controls):
    """create_app()'s API as the fixture server serves it, over ``store`` (a new ``StubStore`` in
    memory by default): a WSGI app, and the test API (Controls). ``admin`` adds the ``/__admin/``
    endpoints; ``cors`` lets pages on any origin call the API; the journal keeps ``journal_size``
    requests; ``access_log`` gets a line per request; ``allowed_hosts``, unless None, lets an app
    on loopback answer only a loopback Host or one of these. Credentials are masked wherever a
    request is shown."""

    def __init__(self, store: PetStore | None = None, api_keys: Sequence[str] = (DEMO_API_KEY,),
                 base_path: str = BASE_PATH, *, admin: bool = False, cors: bool = False,
                 journal_size: int = JOURNAL_SIZE, access_log: Callable[[str], Any] | None = None,
                 allowed_hosts: Iterable[str] | None = None) -> None:
        if isinstance(allowed_hosts, str):
            raise TypeError(f'give a list of host names; got {allowed_hosts!r}')
        check_api_keys(api_keys)
        self.allowed_hosts = None if allowed_hosts is None else frozenset(
            map(parse_allowed_host, allowed_hosts))
        self.store = store = StubStore() if store is None else store
        self.api = api = create_app(store, api_keys, base_path, public_paths=(
            '/', '/docs', f'{base_path}/openapi.json', FAVICON,
            *([f'{ADMIN_PREFIX}health', f'{ADMIN_PREFIX}openapi.json'] if admin else [])),
            error_handler=pass_on)
        api.catchall = False  # a failure too goes on to the path, which answers it and keeps it
        self.api_keys, self.base_path = tuple(api_keys), base_path
        self.cors, self.access_log = cors, access_log
        #: For check(): each failure in the app or its server, without frames, and its traceback.
        self.errors: collections.deque[tuple[BaseException, str]] = collections.deque(maxlen=100)
        self.gate, self.faults = ResetGate(), Faults()
        self.journal = Journal(journal_size, admin, self.api_keys)
        self._hinted = False  #: whether the access log has said to restart with --cors
        add_documents(api, base_path, self.api_keys, admin)
        if admin:
            add_admin_routes(api, self)

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        """Take a request through each step, top to bottom. Every answer leaves by respond()."""
        if (exchange := environ.get(EXCHANGE)) is None:  # in process: no server made one
            exchange = environ[EXCHANGE] = Exchange(time.monotonic_ns())
        started = time.perf_counter()
        route_as_sent(environ)  # what every step sees: the path as the client sent it
        # A refusal is answered at once, and a reset (an admin call) must not wait for itself.
        gated = exchange.refusal is None and not is_admin_call(environ)
        admitted = not gated or self.gate.enter(exchange)  # a cut-off waited out
        answer: Answer | ApiError | None = None
        body_copy, cors = None, False
        try:
            if not admitted:  # a cut-off began after it came: closed unanswered, never recorded
                exchange.close = 'dropped'
            else:
                try:
                    body_copy = self.journal.copy_body(environ)  # None for one it passes by
                    if self.allowed_hosts is not None:
                        check_host(environ, self.allowed_hosts)
                    answer = preflight(environ, exchange, self.cors)
                    if answer is None:  # the API answers: with --cors, a page anywhere may read it
                        cors = self.cors and not is_admin_call(environ)
                        # A refusal is returned, not raised: raised, it would take this frame along.
                        answer = exchange.refusal or self.api_answer(environ, exchange)
                except ApiError as error:
                    answer = error
                except Exception as error:  # a bug: a 500 for its request, and check() raises it
                    failure = without_frames(error)
                    environ['wsgi.errors'].write(failure[1])
                    self.errors.append(failure)
                    answer = stub_failed()
            result = self.respond(environ, exchange, answer, start_response, cors)
            try:  # what is noted of it: a failure here is kept for check(), and the answer stands
                if body_copy is not None and not exchange.page:  # a browser visit is no call
                    operation = exchange.operation  # for a 401, sent before routing, the one it
                    if operation is None and exchange.status == 401:  # would have reached
                        operation = getattr(self.route_of(environ), 'name', None)
                    self.journal.record(environ, exchange, body_copy.whole(), operation)
                if exchange.fault == 'hang' and exchange.hold:  # journalled as hanging, it waits
                    self.gate.hold(exchange.hold, exchange)
                if self.access_log is not None:
                    self.log(self.access_log, environ, exchange, started)
            except Exception as error:
                self.errors.append(without_frames(error))
        finally:
            if gated:
                self.gate.leave()
        return result

    def api_answer(self, environ: dict, exchange: Exchange) -> Answer | ApiError | None:
        """After the delay, a fault's answer or the API's; None: closed unanswered."""
        route = self.route_of(environ) if self.faults.armed else None
        if route is not None and route.name in OPERATIONS and self.accepts_key(
                environ.get('HTTP_AUTHORIZATION')):  # a 401 stays a 401
            delays = self.faults.delays
            if (delay := delays.get(None, 0.0) + delays.get(route.name, 0.0)) and self.gate.hold(
                    delay, exchange):  # let go by a reset
                exchange.close = 'dropped'
                return None
            if (fault := self.faults.take(route.name)) is not None:
                exchange.operation, kind = route.name, fault['fault']
                exchange.fault = kind
                if isinstance(kind, int):
                    raise fault_error(kind, fault, [r.method for r in self.api.routes
                                                    if r.rule == route.rule])
                if kind in ('drop', 'reset', 'hang') and not exchange.can_close:
                    raise ApiError(500, 'fault_needs_a_server', f'a {kind!r} fault closes the '
                                   'connection, and this request came over none: use '
                                   'petstore_server or serve(), not petstore_app')
                exchange.hold = fault['seconds'] or 0.0  # a hang's, held once it is journalled
                if kind in ('drop', 'reset', 'hang'):
                    exchange.close = 'reset' if kind == 'reset' else 'dropped'
                    return None
        # The faults left garble any answer, a 404 too: a fault taken is never spent on nothing.
        return self.call_api(environ, exchange)

    def call_api(self, environ: dict, exchange: Exchange) -> Answer:
        sent: list[tuple[str, list]] = []
        if environ['REQUEST_METHOD'] == 'HEAD':  # a GET's answer, whose body respond() leaves out
            environ = {**environ, 'REQUEST_METHOD': 'GET'}
        try:
            body = self.api(environ, lambda status, headers, exc_info=None: sent.append(
                (status, headers)))
        finally:  # bottle has routed it, unless the key check refused it first
            exchange.operation = getattr(environ.get('bottle.route'), 'name', None)
        (status, headers), = sent
        if exchange.operation in DOCUMENTS:
            policy = page_policy() if exchange.page else (
                "default-src 'none'; frame-ancestors 'none'")
            headers = [*headers, ('Content-Security-Policy', policy),
                       ('X-Content-Type-Options', 'nosniff'), ('Referrer-Policy', 'no-referrer')]
        return status, headers, body

    def respond(self, environ: dict, exchange: Exchange, answer: Answer | ApiError | None,
                start_response: Callable, cors: bool = False) -> Iterable[bytes]:
        """Send any answer: this is the one way out. None closes the connection unanswered (in
        process, where there is no connection, it is an empty 204)."""
        if answer is None:
            if exchange.can_close:
                return []
            answer = '204 No Content', [], []
        if isinstance(answer, ApiError):
            exchange.error = {'code': answer.code, 'message': answer.message}
            data = answer.body.encode('utf-8', 'backslashreplace')  # a lone surrogate: \ud800
            answer = answer.status_line, with_length(answer.headerlist, data), [data]
        if exchange.fault in ('truncate', 'malformed', 'slow'):
            def cut_short(pause: float) -> bool:  # by a reset's cut-off; a stop lets it finish
                return self.gate.hold(pause, exchange) and self.gate.cut_since(exchange)
            answer = spoiled(answer, exchange.fault, exchange.hold, cut_short)
        status, headers, body = answer
        exchange.status = int(status[:3])
        start_response(status, [*headers, *CORS_HEADERS] if cors else headers)
        return [] if environ['REQUEST_METHOD'] == 'HEAD' else body

    def log(self, log: Callable[[str], Any], environ: dict, exchange: Exchange,
            started: float) -> None:
        if environ['PATH_INFO'] != FAVICON:
            query = environ.get('QUERY_STRING')
            path, mark, query = (environ.get('REQUEST_URI') or (  # as sent; in-process, rebuilt
                environ.get('PATH_INFO', '') + (f'?{query}' if query else ''))).partition('?')
            target = without_userinfo(path) + mark + masked_query(query)  # as the journal shows
            # A refusal's request line may have no target, or be no line at all ('-').
            milliseconds = (time.perf_counter() - started) * 1000
            duration = '-' if exchange.refusal else f'{milliseconds:.1f}ms'
            log(log_line(environ.get('REMOTE_ADDR') or '-',
                         f'{environ["REQUEST_METHOD"]} {target}'.rstrip(),
                         str(exchange.close or exchange.status or 'dropped'), duration))
        if not self._hinted and exchange.error and exchange.error['code'] == 'cors_not_enabled':
            self._hinted = True
            origin = printable(without_userinfo(environ['HTTP_ORIGIN']))[:200]
            log(f'petstore-stub: a page on {origin} asked to call the API; restart the stub with '
                '--cors to let it')

    def route_of(self, environ: dict) -> bottle.Route | None:
        with contextlib.suppress(bottle.HTTPError):
            return self.api.router.match(environ)[0]
        return None

    def accepts_key(self, authorization: str | None) -> bool:
        """Whether the key passes: the one thing the adapter asks the app, before 100 Continue."""
        with contextlib.suppress(ApiError):
            check_bearer(authorization, self.api_keys)
            return True
        return False


def pass_on(error: bottle.HTTPError) -> str:
    """Raise every error bottle would send (its 404s too) as an ApiError, for respond() to send;
    a 404 under the admin prefix names the admin document, not the API's base path."""
    if error.status_code == 404 and not isinstance(error, ApiError) and is_admin_call(
            bottle.request.environ) and any(route.name == 'adminOpenapi'  # no route there
                                            for route in bottle.request.app.routes):
        path = printable(without_userinfo(bottle.request.environ['bottle.raw_path']))
        raise ApiError(404, 'not_found', f'nothing is at {path}; the admin endpoints are listed '
                       f'in {ADMIN_PREFIX}openapi.json')
    raise as_api_error(error)


def as_value_error(parse: Callable[..., Any], document: Any, **options: Any) -> Any:
    try:
        return parse(document, **options)
    except ApiError as error:
        raise ValueError(error.message) from None


def without_frames(error: BaseException) -> tuple[BaseException, str]:
    """The exception, cut loose from its frames (they keep every local alive), and its traceback."""
    text = ''.join(traceback.format_exception(error))
    link: BaseException | None = error
    while link is not None:
        link.__traceback__ = None
        link = link.__cause__ or link.__context__
    return error, text


create_stub = StubApp  #: the fixture server's app factory, as create_app() is the plain API's


# -- The path's steps, in the order a request takes them -----------------------

def is_admin_call(environ: dict) -> bool:
    return environ['PATH_INFO'].startswith(ADMIN_PREFIX)


class ResetGate:
    """The gate that API requests pass, which a reset closes for a moment: its cut-off.

    At a cut-off, the requests that a delay, a hang or a slow answer holds are let go, the requests
    under way are waited for, and new requests wait at the gate. A request that arrived before the
    cut-off closes unanswered, so nothing sent before a reset reaches a test after it."""

    def __init__(self) -> None:
        self.under_way = 0  #: the API requests let in that have not left
        self._mutex = threading.Lock()  #: the condition's lock, taken alone where no one waits
        self._lock = threading.Condition(self._mutex)
        self._cut_at = 0  #: when the last cut-off began (time.monotonic_ns())
        self._cutting = False  #: while a cut-off is made: new requests wait
        self._stopping = False  #: set by release(): nothing is held any more

    def enter(self, exchange: Exchange) -> bool:
        """Wait out a cut-off; False if the request came before it, and so closes unanswered. A
        leave() follows each enter()."""
        with self._mutex:
            if self._cutting:
                self._lock.wait_for(lambda: not self._cutting)
            self.under_way += 1
            return exchange.received >= self._cut_at

    def leave(self) -> None:
        with self._mutex:
            self.under_way -= 1
            if self._cutting:  # only a cut-off waits for this count
                self._lock.notify_all()

    def hold(self, seconds: float, exchange: Exchange) -> bool:
        """Hold for ``seconds``, or until release() or a cut-off since it came; True if let go."""
        with self._lock:
            return self._lock.wait_for(
                lambda: self._stopping or exchange.received < self._cut_at, seconds)

    def cut_since(self, exchange: Exchange) -> bool:
        """Whether a cut-off has begun since ``exchange`` arrived."""
        with self._lock:
            return exchange.received < self._cut_at

    def release(self) -> None:
        with self._lock:
            self._stopping = True
            self._lock.notify_all()

    @contextlib.contextmanager
    def cut_off(self) -> Iterator[int]:
        """Free held requests, wait for those under way, and yield when the cut-off began; new
        requests wait until it ends."""
        with self._lock:
            self._cutting, self._cut_at = True, time.monotonic_ns()
            self._lock.notify_all()  # what a delay, a hang or a slow answer holds is stale now
            self._lock.wait_for(lambda: not self.under_way, timeout=5)
            try:
                yield self._cut_at
            finally:
                self._cutting = False
                self._lock.notify_all()


def route_as_sent(environ: dict) -> None:
    """Route on the path as sent: ``/v1/pets/%31`` is ``/v1/pets/1``, but one decoding would reshape
    (``/v1/pets%2F1``, an empty or dot segment, not UTF-8) stays encoded, to alias no resource."""
    target = environ.get('REQUEST_URI')  # the server's: the request target as sent
    if target is None:  # in-process, as WebTest calls it: the path is already decoded
        sent = urllib.parse.quote(environ.get('PATH_INFO', ''), safe='/', encoding='latin-1')
    else:
        sent = target.partition('?')[0]
        if not sent.startswith('/'):  # the absolute form, http://host/path
            sent = re.sub(r'^[^/]*//[^/]*', '', sent) or '/'
    if ('%' in sent or '//' in sent or '/.' in sent or not sent) and not all(
            is_plain_segment(segment) for segment in sent[1:].split('/')):
        environ['PATH_INFO'] = sent


def is_plain_segment(segment: str) -> bool:
    with contextlib.suppress(UnicodeDecodeError):
        decoded = urllib.parse.unquote_to_bytes(segment).decode('utf-8')
        return decoded not in ('', '.', '..') and '/' not in decoded
    return False


class Journal:
    """The last ``size`` requests (0: none) as sent; not admin calls, the page ``/`` or its icon."""

    def __init__(self, size: int, admin: bool, api_keys: Sequence[str] = ()) -> None:
        self.size, self.admin, self.api_keys = size, admin, api_keys
        self.coverage = Coverage()  #: counted as each entry is made, and kept past a clear
        #: Each entry, with when its request arrived.
        self._entries: collections.deque[tuple[int, dict]] = collections.deque(maxlen=size)
        self._lock = threading.Lock()
        self._sequence = itertools.count(1)  #: never reset
        self._cut_at = 0  #: requests that arrived before it are not recorded

    def copy_body(self, environ: dict) -> BodyCopy | None:
        passed_by = self.admin and is_admin_call(environ) or environ['PATH_INFO'] == FAVICON
        return BodyCopy(environ) if self._entries.maxlen and not passed_by else None

    def record(self, environ: dict, exchange: Exchange, body: bytes, operation: str | None) -> None:
        entry = journal_entry(environ, exchange, body, self.api_keys)
        entry['unmatched'] = operation is None and exchange.status != 204  # a preflight matches
        self.coverage.count(operation, entry)
        with self._lock:
            if exchange.received >= self._cut_at:
                self._entries.append((exchange.received, {**entry,
                                                          'sequence': next(self._sequence)}))

    def entries(self, since: int = 0) -> list[dict]:
        with self._lock:
            kept = [entry for _, entry in self._entries if entry['sequence'] > since]
        return [{**entry, 'body': decode_journal_body(entry['body'])} for entry in kept]

    def clear(self, cut_at: int = 0) -> None:
        """Forget requests that arrived before ``cut_at``, now and once answered; with none, all."""
        with self._lock:
            self._cut_at = max(self._cut_at, cut_at)
            kept = [item for item in self._entries if cut_at and item[0] >= cut_at]
            self._entries = collections.deque(kept, self._entries.maxlen)


class Coverage:
    """What the client's calls met of the API's description; a reset keeps it: it spans a run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.clear()

    def count(self, operation: str | None, entry: dict) -> None:
        responses = described_responses().get(operation or '', ())  # none: a document, no route
        status, fault = entry['status'], entry['fault']
        described = entry['unmatched'] and describe_call(  # outside the lock every request takes
            {**entry, 'body': decode_journal_body(entry['body'])})
        with self._lock:
            if responses:
                self._calls[operation, 'none' if status is None else str(status)
                            if str(status) in responses else 'default'] += 1
                if fault is not None:
                    self._faults[str(fault)] += 1
            if described and len(self._unmatched) < JOURNAL_SIZE:
                self._unmatched.append(described)

    def clear(self) -> None:
        with self._lock:
            #: Calls by (operation, status as described: '200', ..., or 'default'); faults by kind.
            self._calls: collections.Counter[tuple[str | None, str]] = collections.Counter()
            self._faults: collections.Counter[str] = collections.Counter()
            self._unmatched: list[str] = []  #: each request no operation answered, described

    def report(self) -> dict:
        with self._lock:
            calls, faults, unmatched = dict(self._calls), dict(self._faults), self._unmatched[:]
        responses = {operation: {status: calls.get((operation, status), 0) for status in statuses}
                     for operation, statuses in described_responses().items()}
        return {
            'responses': responses, 'met': met_count(responses),
            'documented': sum(map(len, responses.values())), 'faults': dict(sorted(faults.items())),
            'deprecated': {operation: {'calls': sum(count for (name, _), count in calls.items()
                                                    if name == operation), 'hint': hint}
                           for operation, hint in deprecated_operations().items()
                           if any(name == operation for name, _ in calls)},
            'unmatched': unmatched}


def described_operations() -> Iterator[tuple[str, str, dict]]:
    for path, methods in openapi_template('openapi.json')['paths'].items():
        for method, operation in methods.items():
            yield path, method, operation


@functools.lru_cache(maxsize=1)
def described_responses() -> dict[str, tuple[str, ...]]:
    return {operation['operationId']: tuple(s for s in operation['responses'] if s != 'default')
            for _, _, operation in described_operations()}


@functools.lru_cache(maxsize=1)
def deprecated_operations() -> dict[str, str]:
    """Each deprecated operation -> a hint: its description, which names what replaces it."""
    return {operation['operationId']: operation['description']
            for _, _, operation in described_operations() if operation.get('deprecated')}


def met_count(responses: dict[str, dict[str, int]]) -> int:
    return sum(bool(count) for counts in responses.values() for count in counts.values())


def never_met(report: dict) -> dict[str, list[str]]:
    return {operation: never for operation, counts in report['responses'].items()
            if (never := [status for status, count in counts.items() if not count])}


def coverage_line(report: dict) -> str:
    never = [f'{operation} {status}' for operation, statuses in never_met(report).items()
             for status in statuses]
    return (f'coverage: {report["met"]} of {report["documented"]} documented responses met'
            + (f'; never: {", ".join(never)}' if never else ''))


class BodyCopy:
    """Replaces ``wsgi.input`` (bottle only calls read()), keeping only what the journal keeps."""

    def __init__(self, environ: dict) -> None:
        self._input, environ['wsgi.input'] = environ['wsgi.input'], self
        length = parse_whole_number(environ.get('CONTENT_LENGTH') or '0')
        self._length = min(length or 0, JOURNAL_BODY_BYTES + 1)
        self._kept = bytearray()

    def read(self, size: int = -1) -> bytes:
        data = self._input.read(size)
        self._kept += data[:self._length - len(self._kept)]
        return data

    def whole(self) -> bytes:
        """What is kept, with what the app did not read of it (a 401's body, say)."""
        with contextlib.suppress(OSError, ValueError):
            self.read(self._length - len(self._kept))
        return bytes(self._kept)


def journal_entry(environ: dict, exchange: Exchange, body: bytes,
                  api_keys: Sequence[str] = ()) -> dict:
    """What the journal keeps of a request, about 10 KB at most, credentials masked but the stub's
    ``api_keys``; the body is parsed when read."""
    path, query = environ.get('PATH_INFO', ''), environ.get('QUERY_STRING', '')
    headers, headers_cut = request_headers(environ, api_keys)
    status = None if exchange.close else exchange.status
    error = exchange.error if status and status >= 400 else None
    return {'method': environ['REQUEST_METHOD'][:JOURNAL_TEXT_CHARS],
            'path': clipped(without_userinfo(path)), 'query': clipped(masked_query(query)),
            'operation': exchange.operation, 'headers': headers,
            'body': body[:JOURNAL_BODY_BYTES + 1], 'status': status,
            'error': error and {**error, 'message': error['message'][:JOURNAL_TEXT_CHARS]},
            'fault': exchange.fault, 'time': time.time(),
            'truncated': (headers_cut or len(body) > JOURNAL_BODY_BYTES
                          or max(len(path), len(query)) > JOURNAL_TEXT_CHARS)}


def clipped(text: str) -> str:
    """Text cut to what the journal keeps, once masked (a cut may drop a password's ``@``)."""
    if isinstance(text, Masked):
        return Masked(text[:JOURNAL_TEXT_CHARS], text.sent[:JOURNAL_TEXT_CHARS])
    return text[:JOURNAL_TEXT_CHARS]


def request_headers(environ: dict, api_keys: Sequence[str]) -> tuple[dict[str, str], bool]:
    """The headers, credentials masked, and whether any were cut; UTF-8 where so."""
    headers: dict[str, str] = {}
    room = JOURNAL_HEADER_CHARS
    for key, value in environ.items():
        if not (key.startswith('HTTP_') or key in ('CONTENT_TYPE', 'CONTENT_LENGTH') and value):
            continue
        name = key.removeprefix('HTTP_').replace('_', '-').title()
        with contextlib.suppress(UnicodeError):  # WSGI gives each byte as a Latin-1 character
            value = utf8(value)
        room -= len(name) + len(value)
        if room < 0:
            return headers, True
        if CREDENTIAL.search(name):
            value = masked(value, api_keys, scheme=name.endswith('Authorization'))
        elif (shown := without_userinfo(value)) != value:
            value = Masked(shown, value)  # a Host's, an Origin's, a Referer's
        headers[name] = value
    return headers, False


class Masked(str):
    """A credential as the journal shows it wherever it goes, ``Bearer <redacted: 16 characters>``;
    ``sent``, as sent, lets a test's expected headers match, and never leaves the process."""

    sent: str

    def __new__(cls, shown: str, sent: str = '') -> Masked:  # a copy sets ``sent`` from its state
        masked = super().__new__(cls, shown)
        masked.sent = sent
        return masked


def masked(value: str, api_keys: Sequence[str], scheme: bool = False) -> str:
    """A credential masked whole, or where ``scheme`` (Authorization) but for a registered scheme;
    as it is if that is Bearer with one of the stub's own keys."""
    kind, space, secret = value.partition(' ')
    if scheme and kind.lower() == 'bearer' and secret.strip(' \t') in api_keys:
        return value
    shown = (f'{kind} <redacted: {len(secret)} characters>' if scheme and space and secret
             and kind.lower() in AUTH_SCHEMES else f'<redacted: {len(value)} characters>')
    return Masked(shown, value)


def masked_query(query: str) -> str:
    """A query, each pair masked whose text before its last = names a credential (``a;token=``),
    and each user:password@ in a name or a value (the rest of the pair kept, and the other
    pairs)."""
    def mask(pair: re.Match[str]) -> str:  # a name and its =, if any; its value
        name, value = pair[1] or '', pair[2]
        if name and CREDENTIAL.search(urllib.parse.unquote_plus(pair[0].rpartition('=')[0])):
            return f'{name}<redacted: {len(value)} characters>'
        return without_userinfo(name) + without_userinfo(value)
    shown = re.sub(r'(?<![^&])([^&=]*=)?([^&]*)', mask, query)
    return query if shown == query else Masked(shown, query)


def decode_journal_body(body: bytes) -> Any:
    """A kept body: JSON if whole, parsed and fit to send as JSON; else text; None if empty."""
    if not body:
        return None
    text = body[:JOURNAL_BODY_BYTES].decode('utf-8', 'replace')
    with contextlib.suppress(ValueError):  # UnicodeEncodeError among them
        value = loads_strict(text)  # as the API reads it
        # Not all that parses goes back out: a lone surrogate, ``1e400``, nesting too deep to wrap.
        if len(body) <= JOURNAL_BODY_BYTES and nesting(value) <= 100:
            json.dumps(value, allow_nan=False, ensure_ascii=False).encode('utf-8')
            return value
    return text


def describe_call(entry: dict) -> str:
    """``POST /v1/pets -> 400 invalid_body {"name": "Rex", "categoryId": "3"}``"""
    target = entry['path'] + (f'?{entry["query"]}' if entry['query'] else '')
    outcome = 'no response' if entry['status'] is None else str(entry['status'])
    outcome += f' {entry["error"]["code"]}' if entry.get('error') else ''
    outcome += '' if entry.get('fault') is None else f' (fault {entry["fault"]})'
    body = '' if entry['body'] is None else ' ' + json.dumps(entry['body'],
                                                             ensure_ascii=False)[:120]
    return f'{entry["method"]} {target} -> {outcome}{body}'


def nesting(value: Any) -> int:
    depth, level = 0, [value]
    while containers := [item for item in level if isinstance(item, (dict, list))]:
        depth += 1
        level = [child for item in containers
                 for child in (item.values() if isinstance(item, dict) else item)]
    return depth


def check_host(environ: dict, allowed_hosts: frozenset[str]) -> None:
    """A 421 for a Host neither loopback nor allowed: a page's name pointed here (DNS rebinding).
    An absolute-form target's host is checked, and Host too: stricter than RFC 9112, 3.2.2."""
    for where in (AUTHORITY, 'HTTP_HOST') if AUTHORITY in environ else ('HTTP_HOST',):
        host = environ.get(where, 'localhost')  # none: HTTP/1.0, no browser's
        name = (host[:host.find(']') + 1] if host.startswith('[') else host.partition(':')[0])
        if not ((name := name.lower()) in ('localhost', '127.0.0.1', '[::1]')
                or name in allowed_hosts or is_loopback(name)):
            what = 'request target' if where == AUTHORITY else 'Host header'
            raise ApiError(421, 'misdirected_request', f'the {what} names '
                           f'{quoted(printable(host), 100)}; this stub answers '
                           'only requests sent to localhost, 127.x.x.x or [::1] (a web page can '
                           'point a name of its own at this machine). If the name is yours, start '
                           'the stub with --allow-host NAME')


def is_loopback(host: str) -> bool:
    with contextlib.suppress(ValueError):
        return (ipaddress.IPv6Address(host[1:-1]) if host.startswith('[')
                else ipaddress.ip_address(host)).is_loopback
    return host == 'localhost'


def parse_allowed_host(text: str) -> str:
    """A name for ``--allow-host`` as Host carries it, ``[fd00::1]``, lower case; or ValueError."""
    label = '(?!-)[a-z0-9_-]{1,63}(?<!-)'  # ``_`` too, as in a Compose service: ``pet_store``
    name = text.lower() if isinstance(text, str) else ''
    if ':' in name and '%' not in name:  # an IPv6 address; a zone would be sent as %25
        with contextlib.suppress(ValueError):
            return f'[{ipaddress.IPv6Address(name.strip("[]")).compressed}]'
    elif len(name) <= 253 and re.fullmatch(rf'{label}(?:\.{label})*', name):
        return name
    raise ValueError('an allowed host is a host name (such as pets.local) or an IP address, '
                     f'without a port; got {text!r}')


def preflight(environ: dict, exchange: Exchange, allow: bool) -> Answer | None:
    """CORS's preflight, keyless: with ``--cors``, a 204 (``*`` is safe: the key is never a cookie);
    else a 403 naming ``--cors``, not a 401 blaming the key; None otherwise (admin: same-origin)."""
    if (environ['REQUEST_METHOD'] != 'OPTIONS' or exchange.refusal is not None
            or is_admin_call(environ)):
        return None
    if allow:
        return '204 No Content', PREFLIGHT_HEADERS, []
    if 'HTTP_ORIGIN' in environ and 'HTTP_ACCESS_CONTROL_REQUEST_METHOD' in environ:
        raise ApiError(403, 'cors_not_enabled', 'this is a preflight from a page on another '
                       'origin, and cross-origin calls are off: start the stub with --cors to let '
                       'pages on any origin call the API')
    return None


def log_line(client: str, request: str, status: str, duration: str) -> str:
    """``2026-11-23 10:34:00 127.0.0.1 GET /v1/pets?limit=3 200 0.4ms``, every byte printable."""
    return f'{time.strftime("%Y-%m-%d %H:%M:%S")} {client} {printable(request)} {status} {duration}'


# -- Faults and delays ---------------------------------------------------------

class Faults:
    """Queued faults and delays, met once a call's key is accepted."""

    def __init__(self) -> None:
        #: The seconds calls wait, by operation name; None's, every call's, adds to each one's.
        self.delays: dict[str | None, float] = {}
        #: Each queued fault, with what is left of its ``times`` and ``after``; and both as asked.
        self._queue: list[tuple[dict, tuple[int, int]]] = []
        self._ids = itertools.count(1)  #: each queued fault's id, never reused
        self._lock = threading.Lock()

    @property
    def armed(self) -> bool:
        """Whether a call may meet a fault or a delay, read without the lock: most meet neither."""
        return bool(self._queue or self.delays)

    def add(self, fault: dict) -> dict:
        with self._lock:
            if len(self._queue) >= FAULTS_QUEUED_MAX:
                raise ApiError(409, 'too_many_faults', f'{FAULTS_QUEUED_MAX} faults are queued, '
                               'the most the stub keeps; let them fire, or cancel them first')
            queued = {'id': next(self._ids), **fault}
            self._queue.append((queued, (fault['times'], fault['after'])))
            return dict(queued)

    def cancel(self, fault_id: int | str) -> None:
        with self._lock:
            kept = [queued for queued in self._queue if queued[0]['id'] != fault_id]
            if len(kept) == len(self._queue):
                raise ApiError(404, 'not_found', f'no fault with id {fault_id} is queued: it has '
                                                 'fired all its times, or was cancelled')
            self._queue = kept

    def take_unused(self) -> list[str]:
        with self._lock:
            unused, self._queue = self._queue, []
        return [f"{fault['fault']!r} for {fault['route'] or 'any operation'}: times "
                f"{fault['times']} of {times} left"
                + (f", after {fault['after']} of {after} left" if after else '')
                for fault, (times, after) in unused]

    def clear(self) -> None:
        with self._lock:
            self._queue = []

    def listed(self) -> dict:
        with self._lock:
            return {'faults': [dict(fault) for fault, _ in self._queue]}

    def take(self, operation: str) -> dict | None:
        """The first queued fault whose ``after`` is spent (each counts this call), or None."""
        with self._lock:
            mine = [fault for fault, _ in self._queue if fault['route'] in (None, operation)]
            due = next((fault for fault in mine if not fault['after']), None)
            for fault in mine:
                fault['after'] = max(fault['after'] - 1, 0)
            if due is not None:
                due['times'] -= 1
                self._queue = [queued for queued in self._queue if queued[0]['times']]
            return due


def fault_error(status: int, fault: dict, allow: Sequence[str]) -> ApiError:
    """A status fault, with its header; not a 407's or 426's: hop-by-hop, which WSGI forbids."""
    headers = {401: {'WWW-Authenticate': f'Bearer realm="{REALM}", error="invalid_token"'},
               405: {'Allow': ', '.join(allow)}}.get(status, {})
    if fault['retry_after'] is not None:
        headers['Retry-After'] = str(fault['retry_after'])
    return ApiError(status, 'invalid_token' if status == 401 else error_code_name(status),
                    f'{http.client.responses.get(status, "Error")} (a fault queued on the stub)',
                    headers)


def spoiled(answer: Answer, kind: str, seconds: float, wait: Callable[[float], Any]) -> Answer:
    """``answer`` as a truncate, malformed or slow fault spoils it; truncate and slow send the
    Content-Length of the whole body."""
    status, headers, body = answer
    if kind == 'malformed':
        data = b'{"fault": "malformed", this is not JSON}\n'
        return status, with_length(headers, data), [data]
    data = b''.join(body)
    return status, headers, ([data[:len(data) // 2]] if kind == 'truncate'
                             else drip(data, seconds, wait))


def with_length(headers: list[tuple[str, str]], data: bytes) -> list[tuple[str, str]]:
    return [*(header for header in headers if header[0] != 'Content-Length'),
            ('Content-Length', str(len(data)))]


def drip(data: bytes, seconds: float, wait: Callable[[float], Any]) -> Iterator[bytes]:
    """``data`` in ten pieces over ``seconds``. A wait that returns True (a reset's cut-off) ends
    it there: the answer stays shorter than its Content-Length, so its connection closes."""
    step = -(-len(data) // 10) or 1
    for start in range(0, len(data), step):
        if start and wait(seconds / 10):
            return
        yield data[start:start + step]


def brief(value: Any, as_json: bool = False) -> str:
    text = json.dumps(value, ensure_ascii=False) if as_json else repr(value)
    text = text.encode('utf-8', 'backslashreplace').decode('utf-8')  # a lone surrogate: escaped
    return text if len(text) <= 200 else text[:199] + '…'


brief_json = functools.partial(brief, as_json=True)


def as_given(value: Any, nothing: str) -> str:
    """A value as its caller writes it: JSON over HTTP (nothing is ``null``), else Python."""
    return brief(value, as_json=nothing == 'null')


def fields_of(document: Mapping[str, Any], kind: str, **defaults: Any) -> dict:
    if unknown := [name for name in document if name not in defaults]:
        *names, last = defaults
        raise bad_body(f'unknown field {quoted(printable(str(unknown[0])))}; {kind} has '
                       f'{", ".join(names)} and {last}')
    return {name: document.get(name, default) for name, default in defaults.items()}


def parse_fault(document: Mapping[str, Any], nothing: str = 'null') -> dict:
    fault = fields_of(document, 'a fault', fault=None, times=1, route=None, after=0,
                      retry_after=None, seconds=None)
    kind, retry_after, seconds = fault['fault'], fault['retry_after'], fault['seconds']
    kinds = f'an HTTP error status (400..599) or one of {", ".join(FAULT_KINDS)}'
    if kind is None:
        raise bad_body(f'fault is required: {kinds}')
    if not (kind in FAULT_KINDS or type(kind) is int and 400 <= kind <= 599):
        raise bad_body(f'fault must be {kinds}; got {as_given(kind, nothing)}')
    for name, least in (('times', 1), ('after', 0)):
        if not (is_whole(fault[name], least) and fault[name] <= FAULT_COUNT_MAX):
            raise bad_body(f'{name} must be a whole number from {least} to {FAULT_COUNT_MAX}; '
                           f'got {as_given(fault[name], nothing)}')
    check_route(fault['route'], nothing)
    if retry_after is not None and kind not in (429, 503):  # the status is what is wrong
        raise bad_body('retry_after goes with a 429 or a 503; this fault is '
                       f'{as_given(kind, nothing)}')
    if retry_after is not None and not (is_whole(retry_after) and retry_after <= 86_400):
        raise bad_body('retry_after is whole seconds, 0 to 86400; '
                       f'got {as_given(retry_after, nothing)}')
    if seconds is not None and not (kind in FAULT_SECONDS and is_delay(seconds) and seconds > 0):
        raise bad_body(f'seconds goes with hang or slow: more than 0, at most '
                       f'{FAULT_SECONDS_MAX:g}; got {as_given(seconds, nothing)}')
    return {**fault, 'seconds': FAULT_SECONDS.get(kind) if seconds is None else seconds}


def parse_delay(document: Mapping[str, Any], nothing: str = 'null') -> dict:
    delay = fields_of(document, 'a delay', seconds=None, route=None)
    if not is_delay(delay['seconds']):
        raise bad_body(f'seconds must be a number from 0 to {FAULT_SECONDS_MAX:g}; '
                       f'got {as_given(delay["seconds"], nothing)}')
    check_route(delay['route'], nothing)
    return delay


def check_route(route: Any, nothing: str) -> None:
    if route not in (None, *OPERATIONS):
        raise bad_body(f'route must be one of {", ".join(OPERATIONS)}, or {nothing}; '
                       f'got {as_given(route, nothing)}')


def is_whole(value: Any, least: int = 0) -> bool:
    return type(value) is int and value >= least


def is_delay(value: Any) -> bool:
    return type(value) in (int, float) and 0 <= value <= FAULT_SECONDS_MAX


# -- The documents, the admin endpoints, the fixtures --------------------------

def add_documents(api: bottle.Bottle, base_path: str, api_keys: Sequence[str], admin: bool) -> None:
    @api.get('/', name='index')
    def index() -> str:
        base = mount_point() + base_path
        bottle.response.set_header('Vary', 'Accept')
        first = bottle.request.get_header('Accept', '').split(',')[0].split(';')[0]
        if first.strip().lower() == 'text/html':  # a browser's; not curl's */*, nor a script's
            bottle.response.content_type = 'text/html; charset=utf-8'
            bottle.request.environ[EXCHANGE].page = True
            key = DEMO_API_KEY in api_keys and is_loopback(bottle.request.remote_addr or '')
            settings = {'basePath': base, 'demoKey': DEMO_API_KEY if key else None, 'admin': admin,
                        'operations': list(OPERATIONS)}
            # In place of the page's defaults; escaped, so that no value can close its script.
            return page_template().replace('{"basePath": "/v1", "demoKey": null, "admin": false, '
                                           '"operations": []}',
                                           json.dumps(settings).replace('<', '\\u003c'), 1)
        demo = f' (here the demo key {DEMO_API_KEY})' if DEMO_API_KEY in api_keys else ''
        return to_json({
            'name': 'Pet Store API (petstore-stub)', 'version': API_VERSION,
            'base_path': base, 'base_url': app_url() + base_path, 'openapi': f'{base}/openapi.json',
            'operations': {  # as the description has them
                operation['operationId']: f'{method.upper()} {base}{path}: {operation["summary"]}'
                + (f' (deprecated, sunset {SUNSET})' if operation.get('deprecated') else '')
                for path, method, operation in described_operations()},
            'authentication': f'send the header Authorization: Bearer <API key>{demo}; '
                              'the stub prints its key when it starts'})

    @api.get(f'{base_path}/openapi.json', name='openapi')
    def openapi() -> str:
        return to_json(openapi_document(app_url() + base_path))

    @api.get('/docs', name='docs')
    def docs() -> None:  # where a person looks for the documentation: the page, which links it
        bottle.request.environ[EXCHANGE].page = True
        raise bottle.HTTPResponse(status=302, Location=mount_point() + '/')

    @api.get(FAVICON, name='favicon')
    def favicon() -> None:
        bottle.response.status = 204  # no icon: a browser asks for one unbidden, and this stops it


@functools.lru_cache(maxsize=1)
def page_template() -> str:
    return data_path('index.html').read_text(encoding='utf-8')


#: The documents: what needs no key, and loads nothing into a browser from elsewhere.
DOCUMENTS = ('index', 'docs', 'openapi', 'favicon', 'adminOpenapi')


@functools.lru_cache(maxsize=1)
def page_policy() -> str:
    inline = {tag: ' '.join(
        f"'sha256-{base64.b64encode(hashlib.sha256(code.encode('utf-8')).digest()).decode()}'"
        for code in re.findall(f'<{tag}>(.*?)</{tag}>', page_template(), flags=re.DOTALL))
        for tag in ('script', 'style')}
    return (f"default-src 'self'; script-src {inline['script']}; style-src {inline['style']}; "
            "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def app_url() -> str:
    environ = bottle.request.environ
    host = (environ.get(AUTHORITY) or environ.get('HTTP_HOST')
            or f'{environ["SERVER_NAME"]}:{environ["SERVER_PORT"]}')
    return f'{environ["wsgi.url_scheme"]}://{host}{mount_point()}'


def openapi_document(base_url: str, name: str = 'openapi.json') -> dict:
    return {**openapi_template(name), 'servers': [{'url': base_url, 'description': 'this stub'}]}


@functools.lru_cache(maxsize=2)
def openapi_template(name: str) -> dict:
    document = json.loads(data_path(name).read_text(encoding='utf-8'))
    schemas = document['components']['schemas']
    for schema, names in (('OperationId', OPERATIONS), ('JournalOperation', JOURNALLED)):
        if schema in schemas:
            schemas[schema]['enum'] = [*names, None]  # null too: OpenAPI 3.0's nullable needs it
    return document


def add_admin_routes(api: bottle.Bottle, stub: StubApp) -> None:
    """The admin endpoints (``--admin``, serve()); all but health and openapi.json need the key."""

    def admin(method: str, path: str, name: str, handler: Callable, *, body: bool = False,
              query: Sequence[str] = (), status: int = 200) -> None:
        where = f'{method} {ADMIN_PREFIX}{path}'

        def checked(**in_path: str) -> str:
            request = bottle.request
            check_query_names(parse_query(request.query_string), where, query)
            if body:
                check_content_type(request.content_type)
                result = handler(parse_json_object(read_body(request, 'an admin request'),
                                                   f'the JSON object {where} takes'))
            elif read_body(request, 'an admin request'):
                raise bad_body(f'{where} takes no body')
            else:
                result = handler(**in_path)
            bottle.response.status = 204 if result is None else status
            return '' if result is None else to_json(result)
        api.route(ADMIN_PREFIX + path, method, checked, name=name)

    def list_requests() -> list:
        values = parse_query(bottle.request.query_string).get('since', ['0'])
        if (since := parse_whole_number(values[0])) is None or len(values) > 1:
            raise bad_parameter('since must be one whole number, the sequence of the last entry '
                                f'you have; got {quoted(printable(", ".join(values)), 60)}')
        return stub.journal.entries(since)

    def assert_requests(document: dict) -> dict:
        call, entries = parse_call_filter(document, times=True), stub.requests
        report = call_report(entries, base_path=stub.base_path, **call, show=brief_json)
        if report:  # the filter is sound; what the client sent is not what it expects
            raise ApiError(409, 'assertion_failed', report[0], details={'assertion': report[1]})
        del call['times']
        return {'matched': len(matching_calls(entries, base_path=stub.base_path, **call))}

    admin('GET', 'health', 'health', lambda: {
        'status': 'ok', 'version': __version__, 'base_url': app_url() + stub.base_path})
    admin('GET', 'openapi.json', 'adminOpenapi', lambda: openapi_document(
        app_url() + ADMIN_PREFIX.rstrip('/'), 'admin-openapi.json'))
    admin('POST', 'reset', 'reset', stub.reset)
    admin('GET', 'requests', 'listRequests', list_requests, query=['since'])
    admin('GET', 'requests/unmatched', 'listUnmatchedRequests', stub.unmatched_requests)
    admin('DELETE', 'requests', 'clearRequests', stub.journal.clear)
    admin('POST', 'requests/count', 'countRequests', lambda document: {'count': len(matching_calls(
        stub.requests, base_path=stub.base_path, **parse_call_filter(document)))}, body=True)
    admin('POST', 'requests/assert', 'assertRequests', assert_requests, body=True)
    admin('POST', 'requests/find', 'findRequests', lambda document: matching_calls(
        stub.requests, base_path=stub.base_path, **parse_call_filter(document)), body=True)
    admin('POST', 'fixtures', 'loadFixtures', stub.load_fixtures, status=201)
    admin('GET', 'faults', 'listFaults', stub.faults.listed)
    admin('POST', 'faults', 'addFault', lambda document: stub.faults.add(parse_fault(document)),
          body=True, status=201)
    admin('DELETE', 'faults', 'clearFaults', stub.faults.clear)
    admin('DELETE', 'faults/<fault_id>', 'cancelFault', lambda fault_id: stub.faults.cancel(
        parse_whole_number(fault_id)
        or printable(without_userinfo(fault_id))[:40]))  # as sent, if no id
    admin('GET', 'settings', 'getSettings', stub.settings)
    admin('GET', 'coverage', 'getCoverage', stub.coverage)
    admin('DELETE', 'coverage', 'clearCoverage', stub.clear_coverage)
    admin('POST', 'delay', 'setDelay', lambda document: stub.set_delay(**parse_delay(document)),
          body=True)


def parse_call_filter(document: Mapping[str, Any], times: bool = False) -> dict:
    """A filter (``times`` for /assert) -> assert_called's arguments, or 400; null: not given."""
    call = fields_of(document, 'a filter', operation=None, method=None, path=None, query=None,
                     json=None, json_including=None, headers=None,
                     **({'times': None} if times else {}))
    if (including := call.pop('json_including')) is not None:
        if call['json'] is not None or not isinstance(including, dict):
            raise bad_body('json_including is an object the body holds at least, given instead '
                           f'of json; got {brief_json(document)}')
        call['json'] = Including(including)
    operation, method, path = call.pop('operation'), call.pop('method'), call.pop('path')
    if (operation is None) == (method is None and path is None) or (method is None) != (
            path is None):
        raise bad_body('name the call by operation, or by method and path: one of the two; '
                       f'got {brief_json(document)}')
    if operation is not None and operation not in JOURNALLED:
        raise bad_body(f'operation must be one of {", ".join(JOURNALLED)}; '
                       f'got {brief_json(operation)}')
    if method is not None and not (isinstance(method, str) and method.isascii()
                                   and method.isalpha()):
        raise bad_body(f'method must be an HTTP method, such as GET; got {brief_json(method)}')
    if path is not None and not (isinstance(path, str) and path.startswith('/')
                                 and '?' not in path):
        raise bad_body(f'path must start with / and hold no query (give it in query); '
                       f'got {brief_json(path)}')
    query, headers, count = call['query'], call['headers'], call.get('times')
    if query is not None and not (isinstance(query, dict) and all(
            isinstance(item, str) or type(item) is int for value in query.values()
            for item in (value if isinstance(value, list) else [value]))):
        raise bad_body(f'query must be an object of strings, integers or lists of them; '
                       f'got {brief_json(query)}')
    if headers is not None and not (isinstance(headers, dict)
                                    and all(isinstance(value, str) for value in headers.values())):
        raise bad_body(f'headers must be an object of strings; got {brief_json(headers)}')
    if count is not None and not is_whole(count):
        raise bad_body(f'times must be a whole number from 0; got {brief_json(count)}')
    return {'what': operation or f'{method} {path}', **call}


def read_fixtures(path: str | os.PathLike | bool | None = None) -> list[dict]:
    path = Path(path) if path and path is not True else data_path('pets.json')
    try:
        documents = loads_strict(path.read_text(encoding='utf-8'))
    except (OSError, ValueError) as error:
        raise DatabaseError(f'{path}: cannot read the fixtures ({error})') from None
    if not isinstance(documents, list):
        raise DatabaseError(f'{path}: fixtures must be a JSON array of NewPet objects')
    new_pets = []
    for number, document in enumerate(documents, start=1):
        try:
            new_pets.append(parse_new_pet(document))
        except ApiError as error:
            raise DatabaseError(
                f'{path}: animal {number} is not a NewPet: {error.message}') from None
    return new_pets


def add_fixtures(store: PetStore, new_pets: Sequence[Mapping[str, Any]]) -> list[dict]:
    """``store.add_many(new_pets)`` into a store that holds no pets; one that holds some: 409."""
    def put(tables: Tables) -> Change:
        if pets := tables.tables[PETS_TABLE]:
            raise ApiError(409, 'store_not_empty', 'the store already holds '
                           f'{pets_phrase(len(pets))}; fixtures go into an empty store only: '
                           'reset it first')
        return store.put_new(tables, new_pets)
    return [{'id': pet_id, **pet} for pet_id, pet in store.change(put).documents.items()]


def pets_phrase(count: int) -> str:
    return f'{count} pet' if count == 1 else f'{count} pets'


def data_path(name: str) -> Path:
    """A file of ``data/``: beside this one (a checkout, an sdist), else where the wheel puts it."""
    here = Path(__file__).resolve().parent
    folders = [here / 'data',
               *(prefix / 'share' / 'petstore-stub' for prefix in list(here.parents)[1:3])]
    for folder in folders:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f'{name} is in none of {", ".join(map(str, folders))}')


# -- Assertions: what the client sent, held against what a test expects --------

def call_report(entries: list[dict], what: str, base_path: str, json: Any,
                query: Mapping[str, Any] | None, headers: Mapping[str, str] | None,
                times: int | None, show: Callable[[Any], str] = brief) -> tuple[str, dict] | None:
    """Why ``entries`` fail assert_called, or None: a message (values as ``show`` writes), JSON."""
    if times is not None and not is_whole(times):
        raise ValueError(f'times is a whole number from 0; got {times!r}')
    if query is not None and any(value is None for value in query.values()):
        raise ValueError('a query value is text, a number, or a list of them; not None')
    calls, as_text = list(filter(call_matcher(what, base_path), entries)), query_as_text(query)
    differences = [list(itertools.islice(call_differences(entry, json, as_text, headers),
                                         DIFFERENCES_SHOWN + 1)) for entry in calls]
    matching = differences.count([])
    if matching if times is None else matching == times:
        return None
    given = (('json_including' if isinstance(json, Including) and show is brief_json else 'json',
              json), ('query', query), ('headers', headers))
    wanted = ', '.join(f'{name}={show(value)}' for name, value in given if value is not None)
    wanted = wanted and f' with {wanted}'
    lines = [f'{what} was not called{wanted}.' if times is None else
             f'{what} was called {times_phrase(matching)}{wanted}; expected {times_phrase(times)}.']
    details = {'expected': {'call': what, **dict(given), 'times': times}, 'matched': matching,
               'calls': []}
    if not calls:
        lines.append(f'No {what} request was recorded'
                     + ('; the journal holds:' if entries else ', nor any other.'))
        lines += listing(list(enumerate(entries, 1))[-CALLS_SHOWN:], len(entries))
        return '\n'.join(lines), details
    nearest = sorted(sorted(range(len(calls)), key=lambda i: len(differences[i]))[:CALLS_SHOWN])
    details['calls'] = [{'sequence': calls[index].get('sequence'), 'differences': [
        {'field': field, **({} if expected is ABSENT else {'expected': expected}),
         **({} if sent is ABSENT else {'sent': sent})}
        for field, expected, sent in differences[index][:DIFFERENCES_SHOWN]]} for index in nearest]
    lines.append(f'Recorded {what} requests ({len(calls)}):')
    lines += listing([(index + 1, calls[index]) for index in nearest], len(calls))
    if not matching:
        closest = min(nearest, key=lambda i: len(differences[i]))
        lines.append(f'The closest, #{closest + 1}, differs in:')
        shown = differences[closest][:DIFFERENCES_SHOWN]
        lines += [f'  {field}: '
                  + ('not expected' if expected is ABSENT else f'expected {show(expected)}')
                  + (', missing' if sent is ABSENT else f', sent {show(sent)}')
                  for field, expected, sent in shown]
        if len(differences[closest]) > len(shown):
            left = sum(1 for _ in call_differences(calls[closest], json, as_text, headers))
            lines.append(f'  ... and {left - len(shown)} more')
    if cut := [f'#{index + 1}' for index in nearest if calls[index]['truncated']]:
        lines.append(f'{", ".join(cut)} {"was" if len(cut) == 1 else "were"} cut in the journal, '
                     f'which keeps {JOURNAL_BODY_BYTES} bytes of a body, {JOURNAL_HEADER_CHARS} '
                     f'characters of headers and {JOURNAL_TEXT_CHARS} of a path or a query: '
                     'expect no more than it keeps.')
    return '\n'.join(lines), details


def listing(numbered: list[tuple[int, dict]], total: int) -> list[str]:
    lines = [f'  {number}. {describe_call(entry)}' for number, entry in numbered]
    if total > len(numbered):
        lines.append(f'  ... and {total - len(numbered)} more (the journal, requests, has them)')
    return lines


def matching_calls(entries: list[dict], what: str, base_path: str, json: Any,
                   query: Mapping[str, Any] | None,
                   headers: Mapping[str, str] | None) -> list[dict]:
    is_what, query = call_matcher(what, base_path), query_as_text(query)
    return [entry for entry in entries
            if is_what(entry) and not any(call_differences(entry, json, query, headers))]


def call_matcher(what: str, base_path: str) -> Callable[[dict], bool]:
    if what in JOURNALLED:
        return lambda entry: entry['operation'] == what
    method, _, path = what.partition(' ')
    if not path.startswith('/'):
        raise ValueError(f"name an operation ({', '.join(JOURNALLED)}) or 'METHOD /path'; "
                         f'got {what!r}')
    if '?' in path:
        raise ValueError(f'give the query as query=, not in the path; got {what!r}')
    paths = (path, base_path + path)
    return lambda entry: entry['method'] == method.upper() and entry['path'] in paths


def call_differences(entry: dict, json: Any, query: Mapping[str, Any] | None,
                     headers: Mapping[str, str] | None) -> Iterator[tuple[str, Any, Any]]:
    """(field, expected, sent) per difference, lazily; ABSENT where missing; ``query`` as text."""
    body = entry['body']
    if isinstance(json, dict) and isinstance(body, dict):
        for name, expected in json.items():  # each name passed over is one of the body's
            if not same_json(expected, sent := body.get(name, ABSENT), isinstance(json, Including)):
                yield name, expected, sent
        yield from ((name, ABSENT, value) for name, value in body.items()
                    if name not in json and not isinstance(json, Including))
    elif json is not None and not same_json(json, body):
        yield 'body', json, body
    if query is not None:
        parsed: dict[str, list[str]] = {}
        shown: dict[str, list[str]] = {}  #: as the journal shows it, where it masked any of it
        with contextlib.suppress(ApiError):  # compared as sent
            parsed = parse_query(getattr(entry['query'], 'sent', entry['query']))
            shown = parse_query(entry['query']) if hasattr(entry['query'], 'sent') else parsed
        for name, expected in query.items():
            sent = parsed.get(name, [ABSENT])
            if not same_json(expected, sent := sent[0] if len(sent) == 1 else sent):
                masked = shown.get(name, ['<redacted>'])  # no name: the mask took it too
                yield f'query {name}', expected, sent if sent is ABSENT else (
                    masked[0] if len(masked) == 1 else masked)
    if headers:
        sent_headers = {name.lower(): value for name, value in entry['headers'].items()}
        for name, expected in headers.items():
            sent = sent_headers.get(name.lower(), ABSENT)
            if not same_json(expected, getattr(sent, 'sent', sent)):
                yield f'header {name}', expected, sent


def query_as_text(query: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if query is None else {
        name: list(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        for name, value in query.items()}


ABSENT = object()


class Including(dict):
    """A body to match (``json=``) that holds at least these fields, in nested objects too."""

    def __repr__(self) -> str:
        return f'Including({super().__repr__()})'


def same_json(expected: Any, sent: Any, partial: bool = False) -> bool:
    """Equal as JSON values: ``3`` is not ``'3'``, ``1`` is not ``true`` nor ``1.0``; where
    ``partial`` (within an Including), an object may hold more fields than expected."""
    partial = partial or isinstance(expected, Including)
    if isinstance(expected, dict) and isinstance(sent, dict):
        return (expected.keys() <= sent.keys() if partial else expected.keys() == sent.keys()
                ) and all(same_json(expected[name], sent[name], partial) for name in expected)
    if isinstance(expected, (list, tuple)) and isinstance(sent, list):
        return len(expected) == len(sent) and all(
            same_json(*pair, partial) for pair in zip(expected, sent))
    return type(expected) is type(sent) and expected == sent


def times_phrase(count: int) -> str:
    return {0: 'no times', 1: 'once', 2: 'twice'}.get(count, f'{count} times')


def is_refused_as_malformed(entry: dict) -> bool:
    status = entry['status']
    return entry.get('fault') is None and (  # a fault: the test asked for it
        status in (400, 405, 413, 415, 431, 505) or status == 404 and entry['operation'] is None)


# -- The console: text for a person, never in the way of a request -------------

class Console:
    """Text queued, bounded, for a thread of its own: a stalled or closed reader never costs a
    request. What cannot be queued or written is dropped, the first drop said on ``warnings``."""

    def __init__(self, stream: IO[str] | None, warnings: Console | None = None,
                 name: str = 'the access log') -> None:
        self.queue: queue.Queue[str | None] = queue.Queue(1000)  #: None: the last, from stop()
        self._stream, self._warnings, self.name = stream, warnings, name
        self._broken, self._warned = stream is None, False
        # Its own fd: a write stuck on a stalled pipe holds no lock stdout's flush at exit needs.
        self._descriptor: int | None = None
        with contextlib.suppress(OSError, ValueError, AttributeError):  # UnsupportedOperation: 2
            self._descriptor = None if stream is None else os.dup(stream.fileno())
        self._thread = threading.Thread(target=self.write_queued, daemon=True)
        self._thread.start()

    def log(self, line: str) -> None:
        self.write(line + '\n')

    def write(self, text: str) -> int:
        try:
            self.queue.put_nowait(text)
        except queue.Full:
            self._warn(f'nobody is reading {self.name}; its lines are dropped until they do')
        return len(text)

    def flush(self) -> None:
        """Nothing to do: the listener writes as soon as it can."""

    def write_queued(self) -> None:
        while (text := self.queue.get()) is not None:
            self.handle(text)

    def handle(self, text: str) -> None:
        if self._broken:
            return
        try:
            if self._descriptor is not None:
                write_all(self._descriptor, text.encode('utf-8', 'replace'))
            else:
                print(text, end='', file=self._stream, flush=True)
        except (OSError, ValueError) as error:
            self._broken = True
            reason = getattr(error, 'strerror', None) or error
            self._warn(f'{self.name} cannot be written ({reason}); its lines are dropped')

    def stop(self) -> None:
        """Write what is queued, giving a stalled reader 1 s."""
        with contextlib.suppress(queue.Full):
            self.queue.put_nowait(None)
        self._thread.join(1.0)
        if self._descriptor is not None and not self._thread.is_alive():
            os.close(self._descriptor)
            self._descriptor = None

    def _warn(self, message: str) -> None:
        if not self._warned and self._warnings is not None:
            self._warned = True
            self._warnings.log(f'petstore-stub: {message}')


# -- HTTPS: a certificate a test can trust ------------------------------------

class Tls:
    """The server's ``context``; ``ca_pem``: the CA trustme made for ``names``, or None."""

    def __init__(self, names: Iterable[str] = (), cert_file: str | os.PathLike | None = None,
                 key_file: str | os.PathLike | None = None) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.context.options |= ssl.OP_NO_RENEGOTIATION  # one handshake, before the request
        self.ca_pem: str | None = None
        if cert_file is not None:
            try:
                self.context.load_cert_chain(cert_file, key_file, password=no_passphrase)
            except (OSError, ValueError) as error:  # SSLError: '[SSL] PEM lib (_ssl.c:3905)'
                reason = getattr(error, 'reason', None) or re.sub(
                    r'^\[\w+\] | \(_ssl\.c:\d+\)$', '', getattr(error, 'strerror', None)
                    or str(error))
                raise ValueError(f'cannot load the certificate {cert_file} ({reason}); give a '
                                 'PEM certificate, and its key unless its file holds it') from None
            return
        try:
            import trustme
        except ModuleNotFoundError:
            raise ModuleNotFoundError("HTTPS with a certificate the stub makes needs trustme: "
                                      "pip install 'petstore-stub[tls]'", name='trustme') from None
        ca = trustme.CA(organization_name='petstore-stub')
        names = ('localhost', '127.0.0.1', '::1', *(name.strip('[]') for name in names))
        try:
            ca.issue_cert(*dict.fromkeys(names)).configure_cert(self.context)
        except ValueError as error:  # IDNA refuses a name, such as one with '_'
            raise ValueError(f'a certificate cannot name every name the stub answers to ({error}); '
                             'choose others, or give a certificate of your own') from None
        self.ca_pem = ca.cert_pem.bytes().decode('ascii')


def no_passphrase() -> str:
    raise ValueError('its key has a passphrase, which the stub cannot ask for; give it without')


def tls_names(host: str, allowed_hosts: Iterable[str]) -> list[str]:
    """Beyond localhost's: the allowed hosts and the address; on every address, this machine's."""
    if host not in ('0.0.0.0', '::', ''):
        return [*map(parse_allowed_host, allowed_hosts), host]
    name, addresses = socket.gethostname(), set()
    with contextlib.suppress(OSError):
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
    # The name may resolve to loopback only: a UDP connect() picks each way out, and sends nothing.
    for family, somewhere in ((socket.AF_INET, '192.0.2.1'), (socket.AF_INET6, '2001:db8::1')):
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((somewhere, 9))
            addresses.add(probe.getsockname()[0])
    # Only what a certificate can name: no zone (fe80::1%eth0), no '_' in a name.
    return [found for found in (name, *sorted(addresses))
            if re.fullmatch(r'[A-Za-z0-9.:-]+', found)]


# -- The server: HTTP/1.1 on httptools, a thread for each connection ----------
# httptools (the binding of llhttp, Node's HTTP parser) reads the bytes; this section decides what
# it reads, what is refused and what goes back. A connection's thread reads a request, calls the
# app and sends the answer: a slow or silent client holds that thread and nothing else.

CONNECTION_LIMIT = 1000  #: open connections, idle or slow ones included, before new ones wait
IDLE_SECONDS = 120.0  #: a connection silent this long is closed, in its TLS handshake too
HEAD_LIMIT = 256 * 1024  #: the bytes of a request line and its headers, past which a 431
SERVER_MAX_BODY_BYTES = 64 * 1024 * 1024  #: a body past this is a 413 before the app sees it
SPOOL_BYTES = 512 * 1024  #: a body past this waits in a temporary file, not in memory
#: A request line (RFC 9112, 3): a method (a token), a target and a version, one space apart.
REQUEST_LINE = re.compile(r"([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+)(?: HTTP/(\d\.\d))?")
TARGET = re.compile(r'[!"$-~]+')  #: printable ASCII but '#': a fragment is never sent
PLAIN_TO_TLS = 'this port speaks HTTPS: send the request to https://, not http://'
#: The Date header's value (RFC 9110, 6.6.1) for a whole second, formatted once, not per answer.
http_date = functools.lru_cache(maxsize=1)(wsgiref.handlers.format_date_time)


class ServerError(Exception):
    """An exception raised inside the server thread, re-raised in the caller's."""


class Request:
    """One request, as the parser reads it: it calls the ``on_`` methods as each part arrives."""

    head = b''  #: the request line and headers, as sent
    body: IO[bytes] | None = None  #: in memory, or past SPOOL_BYTES in a file
    size = length = 0  #: the body's bytes read; its Content-Length
    chunked = sized = False  #: the body is chunked; a chunk's size line was just read
    lines = chunk_left = 0  #: bytes read a line at a time (head, size lines, trailers); a chunk's
    head_done = done = keep_alive = False
    method = target = ''
    version = '1.1'
    headers: dict[str, str]  #: by environ key (HTTP_X_TOKEN), once the head is read
    received = 0  #: when its head was read (time.monotonic_ns())
    refusal: ApiError | None = None

    def on_headers_complete(self) -> None:
        self.head_done = True

    def on_chunk_header(self) -> None:
        self.sized = True

    def on_body(self, data: bytes) -> None:
        if self.body is None:
            self.body = tempfile.SpooledTemporaryFile(SPOOL_BYTES)  # noqa: SIM115 (closed later)
        self.body.write(data)
        self.size += len(data)

    def on_message_complete(self) -> None:
        self.done = True

    def wanted(self, data: bytes) -> int:
        """How much of ``data`` the parser may read: never past this request's end (a blank line
        after the head, a Content-Length's last byte, a chunked body's last CRLF), so that the
        next request's bytes stay where they are; a chunk's bytes at once, a size line whole."""
        if self.head_done and not self.chunked:
            return min(len(data), self.length - self.size)
        if self.chunk_left:
            return min(len(data), self.chunk_left)
        delimiter = b'\r\n' if self.head_done else b'\r\n\r\n'
        if (end := data.find(delimiter)) >= 0:
            return end + len(delimiter)
        return 0 if self.head_done else len(data.rstrip(b'\r\n'))  # all but what may begin the end


def split_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    """A head's method, target, version and headers, however malformed: headers by environ key
    (HTTP_X_TOKEN), one sent twice joined, one named with '_' left out (else Content_Length
    would pass as Content-Length, and a proxy in front would see the request end elsewhere)."""
    line, *fields = re.split(r'\r?\n', head.decode('latin-1').lstrip('\r\n'))
    headers: dict[str, str] = {}
    for name, _, value in (field.partition(':') for field in fields if field):
        if '_' not in name:
            key, value = 'HTTP_' + name.upper().replace('-', '_'), value.strip(' \t')
            headers[key] = f'{headers[key]}, {value}' if key in headers else value
    if found := REQUEST_LINE.fullmatch(line):
        return found[1], found[2], found[3] or '0.9', headers
    method, _, target = re.sub(r'[ \t]+', ' ', line).rsplit(' HTTP/', 1)[0].partition(' ')
    return method, target, '', headers


def refusal_of(request: Request, error: httptools.HttpParserError | None) -> ApiError | None:
    """The server's refusal of a request's head, in its own words, never the parser's, or None.
    The parser (``error``) checks the syntax; this, what the head says, by RFC 9112."""
    target, version, headers = request.target, request.version, request.headers
    coding, length = headers.get('HTTP_TRANSFER_ENCODING'), headers.get('HTTP_CONTENT_LENGTH')
    host = headers.get('HTTP_HOST')
    if not version:
        return bad_request('the request is not valid HTTP: its request line must be a method, a '
                           'target and HTTP/1.1, one space apart')
    if version not in ('1.0', '1.1'):
        return ApiError(505, error_code_name(505), f'HTTP/{version} is not served here; send '
                        'HTTP/1.1')
    if coding is not None:
        codings = [name for name in coding.replace(' ', '').lower().split(',') if name]
        if version == '1.0' or length is not None:  # which can smuggle a request (RFC 9112, 6.1)
            return bad_request('Transfer-Encoding goes with neither Content-Length nor HTTP/1.0')
        if not codings or codings.count('chunked') > 1 or 'chunked' in codings[:-1]:
            return bad_request('the Transfer-Encoding header must name chunked, once and last; '
                               f'got {quoted(printable(coding), 60)}')
        if codings != ['chunked']:
            return ApiError(501, error_code_name(501), 'the only Transfer-Encoding served is '
                            f'chunked; got {quoted(printable(coding), 60)}')
    if (host is None and version == '1.1') or (host is not None and ',' in host):
        return bad_request('send one Host header (an HTTP/1.1 request must)')  # twice: joined
    if host is not None and ((found := HOST_PATTERN.fullmatch(host)) is None
                             or int(found['port'] or 0) > 65535):
        return bad_request('the Host header must be a host name, with a port if any; '
                           f'got {quoted(printable(host), 60)}')
    absolute = not target.startswith(('/', '*'))  # the absolute form (RFC 9112, 3.2)
    try:  # a path alone holds no authority to split: the common request costs no split
        parts = urllib.parse.urlsplit(target) if absolute or target.startswith('//') else None
    except ValueError as invalid:  # an authority such as [x
        return bad_request(f'the request is not valid HTTP: the request target is not a URL '
                           f'({invalid})')
    if not TARGET.fullmatch(target) or target == '*' and request.method != 'OPTIONS' or (
            parts and absolute and (parts.scheme not in ('http', 'https') or not parts.hostname)):
        return bad_request('the request target must be a path, or an http:// or https:// URL '
                           'with a host, in printable ASCII and without #; * goes with OPTIONS')
    if length is not None and (parse_whole_number(length) or 0) > SERVER_MAX_BODY_BYTES:
        return body_too_large()
    problem = None if error is None else {  # by its class: the parser's words are not ours
        httptools.HttpParserInvalidMethodError: f'{quoted(printable(request.method), 20)} is not a '
                                                'method (they are in capitals)',
        httptools.HttpParserInvalidURLError: 'the request target must be a path or a URL',
    }.get(type(error), 'each header line must be Name: value, end in CRLF and hold no control '
                       'byte, and a Content-Length be one number')
    return None if problem is None else bad_request(f'the request is not valid HTTP: {problem}')


def timeval(seconds: float) -> bytes:
    """A timeout as SO_RCVTIMEO and SO_SNDTIMEO take it: a struct timeval; on Windows, ms."""
    # Rounded up: a timeout of 0 is none at all, so a timeout under the unit must not become 0.
    if os.name == 'nt':
        return struct.pack('I', math.ceil(seconds * 1000))
    return struct.pack('ll', *divmod(math.ceil(seconds * 1_000_000), 1_000_000))


def bad_request(message: str) -> ApiError:
    return ApiError(400, 'bad_request', message)


def body_too_large() -> ApiError:
    return ApiError(413, 'payload_too_large', f'the body is over {SERVER_MAX_BODY_BYTES} bytes; '
                    f'a NewPet takes at most {MAX_BODY_BYTES}')


class Connection:
    """A client's connection, in a thread of its own: read a request, answer it, and again."""

    plain = False  #: plain HTTP sent to the HTTPS port
    stalled = False  #: the client took too little of its answer: nothing is read of it at the close
    request: Request | None = None  #: the one being read or answered

    def __init__(self, server: StubServer, sock: socket.socket, address: tuple) -> None:
        self.server, self.sock, self.address = server, sock, address
        self.buffer = b''  #: what has been received and not yet given to the parser
        self.open, self.lock = True, threading.Lock()  #: a stop never shuts a descriptor reused
        self.thread = threading.Thread(target=self.serve, daemon=True,
                                       name=f'petstore-stub:{server.port}:{address[1]}')

    def serve(self) -> None:
        how = 'keep'
        try:
            # Blocking, with the kernel's timeouts: a read or a write is one system call, not a
            # poll() first, each a turn of the threads' lock when many connections run.
            self.sock.setblocking(True)
            for option, seconds in ((socket.SO_RCVTIMEO, self.server.idle_timeout),
                                    (socket.SO_SNDTIMEO, self.server.send_timeout)):
                self.sock.setsockopt(socket.SOL_SOCKET, option, timeval(seconds))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            local = self.sock.getsockname()[0]  # the address the client reached
            self.environ = {  # what every request on it shares
                'SERVER_NAME': f'[{local}]' if ':' in local else local, 'SCRIPT_NAME': '',
                'SERVER_PORT': str(self.server.port), 'REMOTE_ADDR': self.address[0],
                'REMOTE_PORT': str(self.address[1]), 'wsgi.version': (1, 0),
                'wsgi.url_scheme': 'http' if self.server.tls is None else 'https',
                'wsgi.multithread': True, 'wsgi.multiprocess': False, 'wsgi.run_once': False}
            if self.server.tls is None or self.start_tls(self.server.tls):
                while how == 'keep' and (request := self.read_request()):
                    how = self.answer(request)
        except OSError:  # the client went, fell silent, or took none of its answer
            pass
        except Exception as error:  # a bug: check() raises it
            self.server.app.errors.append(without_frames(error))
        finally:
            if self.request is not None and self.request.body is not None:
                self.request.body.close()  # one the client or a stop cut short
            self.close(how)
            self.server.connections.discard(self)
            self.server.slots.release()

    def start_tls(self, tls: Tls) -> bool:
        """Over TLS, or plain HTTP (read for its 400), as the first byte says; else False."""
        first = self.sock.recv(1, socket.MSG_PEEK)
        if first != b'\x16':  # not a handshake: a method, or blank lines, or no HTTP at all
            self.plain = True
            return bool(first) and (first.isalpha() or first in b'\r\n')
        # Python's timeouts here: SSL's reads and writes go on past SO_RCVTIMEO's.
        self.sock.settimeout(self.server.idle_timeout)
        try:  # on self.sock while under way: a stop can shut it down
            self.sock = tls.context.wrap_socket(self.sock, server_side=True,
                                                do_handshake_on_connect=False)
            self.sock.do_handshake()
        except OSError as error:  # a client that speaks no TLS the stub takes, or distrusts it
            log = self.server.app.access_log
            if log is not None and (reason := getattr(error, 'reason', None)):
                log(log_line(self.address[0], 'TLS handshake', 'refused', f'({reason})'))
            return False
        return True

    def read_request(self) -> Request | None:
        """Read the next request, whole or refused; None once the client closes, or at a stop."""
        request = self.request = Request()
        parser = httptools.HttpRequestParser(request)
        while not (request.done or request.refusal or self.server.stopped):
            end, head_done = request.wanted(self.buffer), request.head_done
            # Lines: the head, or a chunked body's size lines and trailers; 256 KiB of them.
            by_line = not head_done or request.chunked and not request.chunk_left
            if by_line and request.lines + (end or len(self.buffer)) > HEAD_LIMIT:
                request.refusal = ApiError(431, error_code_name(431), 'the request headers are '
                                           f'over {HEAD_LIMIT} bytes in all') if not head_done \
                    else ApiError(413, 'payload_too_large', "a chunked body's size lines and "
                                  f'trailers are over {HEAD_LIMIT} bytes in all')
                break
            if not end:
                if not (data := self.sock.recv(65536)):
                    return None  # an unfinished request: unanswered
                self.buffer += data
                continue
            self.feed(request, parser, end, by_line)
        if self.plain and request.refusal:  # whatever else is wrong with it
            request.refusal = bad_request(PLAIN_TO_TLS)
        request.received = request.received or time.monotonic_ns()
        return request if request.done or request.refusal else None

    def feed(self, request: Request, parser: httptools.HttpRequestParser, end: int,
             by_line: bool) -> None:
        """Give the parser the buffer's first ``end`` bytes; read the head once it is whole."""
        piece, self.buffer = self.buffer[:end], self.buffer[end:]
        head_done, error = request.head_done, None
        if by_line:
            request.lines += len(piece)
        elif request.chunked:
            request.chunk_left -= len(piece)
        if not head_done:
            request.head += piece
        try:
            parser.feed_data(piece)
        except httptools.HttpParserUpgrade:  # CONNECT, or an Upgrade: answered, then closed
            pass
        except httptools.HttpParserError as failed:
            error = failed
        if not head_done and (request.head_done or error):
            self.read_head(request, parser, error)
        elif error:
            request.refusal = bad_request('the request is not valid HTTP: a chunked body is '
                                          'chunks, each its size in hex, CRLF, its bytes, CRLF')
        if request.sized:  # the piece is a chunk's size line, whole: a size too large, a 413
            size = int(piece.partition(b';')[0].rstrip(b'\r\n'), 16)  # the parser took it
            request.sized, request.chunk_left = False, size and size + 2  # and its CRLF
            if request.size + size > SERVER_MAX_BODY_BYTES:
                request.refusal = body_too_large()

    def read_head(self, request: Request, parser: httptools.HttpRequestParser,
                  error: httptools.HttpParserError | None) -> None:
        """What the head says, the refusal it earns and the body's framing; a 100 Continue."""
        request.received = time.monotonic_ns()  # when its Exchange begins
        request.method, request.target, request.version, headers = split_head(request.head)
        request.headers = headers
        request.refusal = bad_request(PLAIN_TO_TLS) if self.plain else refusal_of(request, error)
        connection = headers.get('HTTP_CONNECTION')
        tokens = {token.strip() for token in connection.lower().split(',')} if connection else ()
        upgrade = parser.should_upgrade()
        request.keep_alive = not upgrade and (
            'keep-alive' in tokens if request.version == '1.0' else 'close' not in tokens)
        request.chunked = 'HTTP_TRANSFER_ENCODING' in headers
        request.length = parse_whole_number(headers.get('HTTP_CONTENT_LENGTH') or '0') or 0
        if upgrade and (request.chunked or request.length) and not request.refusal:
            request.refusal = bad_request('the stub speaks HTTP/1.1 alone: send a request with a '
                                          'body without Upgrade')  # the parser would skip it
        if request.done or request.refusal or self.buffer or request.version != '1.1' or (
                headers.get('HTTP_EXPECT', '').lower() != '100-continue'):
            return
        # 100 Continue only for a key the app takes; else its 401 now, and a close: a body may come.
        if request.method in ('GET', 'HEAD') or self.server.app.accepts_key(
                headers.get('HTTP_AUTHORIZATION')):
            self.send(b'HTTP/1.1 100 Continue\r\n\r\n')
        else:
            request.done, request.keep_alive = True, False

    def environ_of(self, request: Request) -> dict:
        """The WSGI environ (PEP 3333), a refusal's of its request line alone; a path as the
        Latin-1 text of its bytes, decoded once."""
        if request.refusal is None:
            method, target, headers = request.method, request.target, request.headers
        else:  # its head may not have been read
            (method, target, request.version, _), headers = split_head(request.head), {}
            request.keep_alive = False
        path, _, query = target.partition('?')
        if not path.startswith('/'):  # the absolute form: its host, not Host's (RFC 9112, 3.2.2)
            with contextlib.suppress(ValueError):
                parts = urllib.parse.urlsplit(target)
                path, host = parts.path, parts.netloc.rpartition('@')[2]
                if host and request.refusal is None:
                    headers[AUTHORITY] = host  # Host stays as sent, for the journal
        headers.pop('HTTP_TRANSFER_ENCODING', None)  # read already: the body is what it gave
        if (content_type := headers.pop('HTTP_CONTENT_TYPE', None)) is not None:
            headers['CONTENT_TYPE'] = content_type  # WSGI's names for these two
        if headers.pop('HTTP_CONTENT_LENGTH', None) is not None or request.body is not None:
            headers['CONTENT_LENGTH'] = str(request.size)
        if request.body is not None:
            request.body.seek(0)
        return {**self.environ, **headers, 'REQUEST_METHOD': method or '-', 'QUERY_STRING': query,
                'PATH_INFO': urllib.parse.unquote_to_bytes(path).decode('latin-1')
                if '%' in path else path, 'REQUEST_URI': target, 'wsgi.errors': sys.stderr,
                'SERVER_PROTOCOL': f'HTTP/{request.version}',
                'wsgi.input': request.body or io.BytesIO()}

    def answer(self, request: Request) -> str:
        """Call the app and send its answer; then 'keep' the connection, or how to close it:
        'close', or a fault's 'dropped' or 'reset'."""
        environ = self.environ_of(request)
        exchange = environ[EXCHANGE] = Exchange(request.received, request.refusal, can_close=True)
        sent: list[tuple[str, list]] = []
        body = self.server.app(environ, lambda status, headers, exc_info=None: sent.append(
            (status, headers)))
        try:
            if exchange.close is not None:  # a fault, or a reset: closed unanswered
                return exchange.close
            (status, headers), = sent
            # The README's tour shows the head as sent: names capitalised, sorted by name.
            fields = [(name.title(), value) for name, value in headers]
            length = dict(fields).get('Content-Length')
            keep = request.keep_alive and not self.server.stopped and (
                length is not None or status[:3] in ('204', '304'))  # else its end is the close
            fields += [('Server', 'petstore-stub'), ('Date', http_date(int(time.time())))]
            if not keep:
                fields.append(('Connection', 'close'))
            elif request.version == '1.0':
                fields.append(('Connection', 'Keep-Alive'))
            fields.sort(key=operator.itemgetter(0))  # a repeated name kept in its order
            lines = [f'HTTP/1.1 {status}', *map(': '.join, fields), '', '']  # RFC 9110, 6.2
            data, size = '\r\n'.join(lines).encode('latin-1'), 0
            if self.server.tls is not None:
                self.sock.settimeout(self.server.send_timeout)
            for piece in body:  # its one piece; or a slow fault's, as each drips
                if len(piece) > 65536:  # not copied behind the head
                    self.send(data)
                    data = b''
                self.send(data + piece)
                data, size = b'', size + len(piece)
            self.send(data)
            if self.server.tls is not None:
                self.sock.settimeout(self.server.idle_timeout)
            # Shorter than its Content-Length (a truncate fault): the close shows the cut.
            whole = environ['REQUEST_METHOD'] == 'HEAD' or length in (None, str(size))
            return 'keep' if keep and whole else 'close'
        finally:
            if hasattr(body, 'close'):
                body.close()
            if request.body is not None:
                request.body.close()

    def send(self, data: bytes) -> None:
        """All of ``data``; an OSError once the client takes under 16 KiB in a send timeout.
        (TCP lets a few KiB through to a client that reads none, as its window settles.)"""
        view, unsent = memoryview(data), 0
        while view:
            try:
                view = view[self.sock.send(view):]
            except (BlockingIOError, TimeoutError):  # the send timeout
                if unsent - (unsent := self.unsent()) < 16_384:
                    self.stalled = True
                    raise
                continue
            if view:  # the kernel holds all it takes: what the client reads counts from here
                unsent = self.unsent()

    def unsent(self) -> int:
        """What the kernel holds for the client, sent or not, that it has yet to take (Linux)."""
        with contextlib.suppress(ImportError, OSError, ValueError):
            import fcntl
            import termios
            return struct.unpack('i', fcntl.ioctl(self.sock, termios.TIOCOUTQ, bytes(4)))[0]
        return 0

    def shut(self, how: int) -> None:
        """Shut the socket down from a stop's thread, unless its own has closed it."""
        with self.lock, contextlib.suppress(OSError):
            if self.open:  # the descriptor's own shutdown, under TLS too: no close_notify
                socket.socket.shutdown(self.sock, how)

    def close(self, how: str) -> None:
        """A FIN, after TLS's close_notify but for a drop fault; for a reset fault, an RST. What
        the client still sends is read for 2 s, so that no RST cuts its answer short, unless it
        stalled."""
        with contextlib.suppress(OSError, ValueError):
            if how == 'reset':
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
            else:
                if how != 'dropped' and isinstance(self.sock, ssl.SSLSocket):
                    self.sock.settimeout(0)  # the close_notify sent; the client's not waited for
                    self.sock.unwrap()
                socket.socket.shutdown(self.sock, socket.SHUT_WR)
                self.sock.settimeout(2)
                deadline = time.monotonic() + 2
                while not self.stalled and self.sock.recv(65536) and time.monotonic() < deadline:
                    pass
        with self.lock:
            self.open = False
            self.sock.close()


class StubServer(Controls):
    """A running stub, as ``with serve() as server:`` and the ``petstore_server`` fixture give one:
    ``url``, ``api_key`` and ``headers`` for a client, the test API (Controls) to drive it.

    Made here, it serves ``app`` in a daemon thread, each connection by a Connection
    (CONNECTION_LIMIT at most); ``port=0`` picks a free port, put in ``url``. With ``tls``, HTTPS;
    the CA to trust in ``ca_file`` (new unless named), removed at stop."""

    def __init__(self, app: StubApp, host: str = '127.0.0.1', port: int = 0, *,
                 tls: Tls | None = None, ca_file: str | os.PathLike | None = None,
                 send_timeout: float = 10.0, idle_timeout: float = IDLE_SECONDS) -> None:
        self.app, self.host, self.port = app, host, port
        self.send_timeout, self.idle_timeout = send_timeout, idle_timeout
        self.store, self.faults, self.gate, self.journal = (app.store, app.faults, app.gate,
                                                             app.journal)
        self.api_keys, self.base_path, self.api_key = app.api_keys, app.base_path, app.api_keys[0]
        self.tls, self.ca_file = tls, None if ca_file is None else Path(ca_file)
        self.stopped = False  #: set by stop(): no connection takes another request
        self.connections: set[Connection] = set()  #: those open; a Connection leaves on its close
        self.slots = threading.Semaphore(CONNECTION_LIMIT)  #: one for each connection that may open
        self._ca_written: tuple[Path, str] | None = None  #: the CA file, and what it holds
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Lock()  #: taken by the first stop(), and kept

    @property
    def url(self) -> str:
        """The base URL, such as ``http://127.0.0.1:54321/v1``."""
        host = f'[{self.host}]' if ':' in self.host else self.host
        return f'{"http" if self.tls is None else "https"}://{host}:{self.port}{self.app.base_path}'

    def ssl_context(self) -> ssl.SSLContext:
        """A client's SSLContext trusting the stub's CA (for your own certificate, the system's)."""
        return ssl.create_default_context(cafile=self.ca_file)

    @property
    def headers(self) -> dict[str, str]:
        """The Authorization header of ``api_key``, for a client: ``headers=server.headers``."""
        return {'Authorization': f'Bearer {self.api_key}'}

    def check(self) -> None:
        """Raise ServerError for what failed in the server since the last check, then AssertionError
        for faults queued since reset() and not used up (dropped, so the next check is clean)."""
        errors = list(self.app.errors)
        self.app.errors.clear()
        if errors:
            (first, text), more = errors[0], len(errors) - 1
            raise ServerError(f'the stub server failed: {first!r}'
                              + (f' (and {more} more)' if more else '') + f'\n{text}') from first
        if unused := self.faults.take_unused():
            raise AssertionError(f'{len(unused)} queued fault'
                                 + (' was' if len(unused) == 1 else 's were') + ' not used up:'
                                 + ''.join(f'\n  {fault}' for fault in unused))

    def bind(self) -> None:
        """Open the listening socket (and learn the port) without serving yet."""
        if self._listener is not None:
            raise RuntimeError('this server is already started')
        family, *_, address = socket.getaddrinfo(
            self.host or None, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        self._listener = socket.create_server(address, family=family, backlog=1024)
        # Each wait for a client ends within a second: a signal's handler (Ctrl-C) runs in the
        # main thread only, between its calls.
        self._listener.settimeout(1.0)
        self.port = self._listener.getsockname()[1]
        if self.tls is not None and self.tls.ca_pem is not None:
            if self.ca_file is None:
                descriptor, name = tempfile.mkstemp(prefix='petstore-stub-ca-', suffix='.pem')
                os.close(descriptor)
                self.ca_file = Path(name)
            try:
                write_whole(self.ca_file, ca_pem := f'written_by: {MARK.format(os.getpid())}\n'
                                                      + self.tls.ca_pem)
            except OSError as error:  # named by its file: no failure to listen
                self.stop()
                raise OSError(error.errno, error.strerror, str(self.ca_file)) from None
            self._ca_written = self.ca_file, ca_pem

    def start(self) -> StubServer:
        """Serve in a daemon thread; a second start raises RuntimeError."""
        self.bind()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True,
                                        name=f'petstore-stub:{self.port}')
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Accept connections until stop(), each served in a thread of its own."""
        if (listener := self._listener) is None:
            raise RuntimeError('bind() or start() this server first')
        try:
            while not self.stopped:
                if not self.slots.acquire(timeout=1.0):  # at the limit, new connections wait
                    continue
                try:
                    sock, address = listener.accept()
                except OSError as error:  # none came; stop() closed it; no descriptor is free
                    self.slots.release()
                    if not (self.stopped or isinstance(error, TimeoutError)):
                        time.sleep(0.01)
                    continue
                connection = Connection(self, sock, address)
                self.connections.add(connection)
                connection.thread.start()
        except BaseException as error:
            self.app.errors.append(without_frames(error))
            raise

    def stop(self) -> None:
        """Stop accepting; let each connection finish the answer it is sending (5 s at most),
        then close it. A later call only waits."""
        if not self._stopping.acquire(blocking=False):
            if self._thread not in (None, threading.current_thread()):
                self._thread.join(timeout=5)
            return
        self.stopped = True
        self.gate.release()  # a delay or a hang holds a connection's thread; let it go
        if self._listener is not None:
            with contextlib.suppress(OSError):  # wakes accept() on Linux; close() does elsewhere
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            if self._thread not in (None, threading.current_thread()):
                self._thread.join(timeout=5)
        connections = list(self.connections)
        for how, seconds in ((socket.SHUT_RD, 5.0), (socket.SHUT_RDWR, 2.0)):
            deadline = time.monotonic() + seconds  # an idle one ends at once; then any left
            for connection in connections:
                connection.shut(how)
            for connection in connections:
                connection.thread.join(max(0.0, deadline - time.monotonic()))
        if self._ca_written is not None:  # unless another stub has written its own there since
            remove_if_it_holds(*self._ca_written)
            self._ca_written = None

    def __enter__(self) -> StubServer:
        return self.start() if self._listener is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextlib.contextmanager
def serve(*, db: str | os.PathLike | None = None, api_keys: Sequence[str] | None = None,
          api_key: str | None = None, staging: bool = False,
          fixtures: str | os.PathLike | bool | None = None, cors: bool = False,
          host: str = '127.0.0.1', port: int = 0, tls: bool = False,
          journal_size: int = JOURNAL_SIZE, allowed_hosts: Iterable[str] | None = (),
          first_id: int = 1) -> Iterator[StubServer]:
    """Run a stub (admin endpoints on) for the duration of a ``with`` block, then check() it.

    In memory unless ``db`` is a file; ``fixtures=True`` loads the demo animals, a path that file;
    new pets' ids start at ``first_id``. Without ``api_keys``, the demo key on loopback, elsewhere
    a random ``server.api_key`` (the demo key there: a ValueError, before anything opens);
    ``api_key``, one key, is deprecated. On a loopback ``host``, a Host not loopback nor in
    ``allowed_hosts`` gets a 421 (None: any Host). ``tls=True`` serves HTTPS with a throwaway CA
    (``server.ca_file``, ``server.ssl_context()``)."""
    if api_key is not None:
        warnings.warn('serve(api_key=KEY) is deprecated: give serve(api_keys=[KEY]), as '
                      'create_stub() takes them', DeprecationWarning, stacklevel=3)
    if api_keys is not None:
        check_api_keys(api_keys)  # one string, or none: a ValueError
    keys, _ = choose_api_keys([*([] if api_key is None else [api_key]), *(api_keys or [])], host)
    certificate = Tls(tls_names(host, allowed_hosts or ())) if tls else None
    with StubStore(db, first_id=first_id) as store:
        app = create_stub(store, keys, STAGING_BASE_PATH if staging else BASE_PATH,
                          admin=True, cors=cors, journal_size=journal_size,
                          allowed_hosts=allowed_hosts if is_loopback(host) else None)
        if fixtures:
            app.load_fixtures(fixtures)
        with StubServer(app, host, port, tls=certificate) as server:
            yield server
    server.check()


# -- The command line ----------------------------------------------------------

DEFAULT_DB, MEMORY_DB = 'petstore.json', ':memory:'
DEFAULT_PORT = 8080
#: What begins a file the stub writes, the ready file (JSON) or the CA file (text before a PEM).
MARK = 'petstore-stub pid {}'
MARKED = re.compile(rb'(?:\{"written_by": "|written_by: )petstore-stub pid ([0-9]{1,18})'
                    rb'(?:", "url": "|\n-----BEGIN CERTIFICATE-----\n)')

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
    add = parser.add_argument
    add('--host', default='127.0.0.1', type=host_name, help='listen address (default: %(default)s)')
    add('--port', type=port_number, default=os.environ.get('PORT', '').strip() or str(DEFAULT_PORT),
        help=f'0 for any free one (default: $PORT or {DEFAULT_PORT})')
    add('--api-key', action='append', default=[], metavar='KEY', dest='api_keys',
        help='accept this bearer key; repeatable (also $PETSTORE_API_KEYS, comma-separated)')
    add('--db', default=DEFAULT_DB, metavar='PATH',
        help=f'TinyDB file, or {MEMORY_DB} to keep nothing (default: %(default)s)')
    add('--fixtures', nargs='?', const='', metavar='FILE',
        help='load the demo animals (or those in FILE) into an empty store')
    add('--first-id', type=first_id_number, default=1, metavar='N', help='give new pets ids from N '
        f'(default: 1; {2 ** 53 + 1} is past what a 64-bit float holds exactly)')
    add('--staging', action='store_true', help=f'serve under {STAGING_BASE_PATH}')
    add('--cors', action='store_true', help='let pages on any origin call the API')
    add('--allow-host', action='append', default=[], metavar='NAME', dest='allowed_hosts',
        help='on loopback, answer a Host of NAME too (else a 421); repeatable')
    add('--admin', action='store_true', help=f'add the {ADMIN_PREFIX} endpoints, for test suites')
    add('--delay', type=delay_flag, action='append', default=[], metavar='[ROUTE=]SECONDS',
        help=f'make each call (or ROUTE\'s calls) wait SECONDS, 0 to {FAULT_SECONDS_MAX:g}, once '
             'its key is accepted; repeatable')
    add('--ready-file', type=ready_file, metavar='PATH',
        help='once listening, write the URLs and pid to PATH as JSON; removed at a clean stop')
    add('--tls', action='store_true', help='serve HTTPS, with a certificate from a CA made at '
        'start (needs the tls extra); implied by the three flags below')
    either = parser.add_mutually_exclusive_group().add_argument  # the CA the stub makes, or yours
    either('--tls-ca-file', type=ca_path, metavar='PATH',
        help='write that CA, for clients to trust, to PATH (default: a new file in the temporary '
             'folder; either way in the ready file, and removed at a clean stop)')
    either('--tls-cert', type=existing_file, metavar='FILE',
        help='serve HTTPS with this certificate of your own (PEM), e.g. from mkcert')
    add('--tls-key', type=existing_file, metavar='FILE',
        help="--tls-cert's private key, unless the certificate's file holds it")
    add('--quiet', action='store_true', help='no access log')
    add('--send-timeout', type=send_seconds, default=10.0, metavar='SECONDS',
        help='close a connection whose client takes under 16 KiB of its answer in SECONDS '
             '(default: %(default)g)')
    add('--version', action='version', version=f'%(prog)s {__version__}')
    return parser


def check_api_keys(api_keys: Sequence[str]) -> None:
    """Raise ValueError unless there are keys, each a bearer token a client can send."""
    if isinstance(api_keys, str) or not api_keys:
        raise ValueError(f'give a list of one or more API keys; got {api_keys!r}')
    for key in api_keys:
        if not isinstance(key, str) or not TOKEN_PATTERN.fullmatch(key):
            raise ValueError(f'API key {key!r} is not a valid bearer token '
                             '(letters, digits and -._~+/ only)')


def choose_api_keys(given: Sequence[str], host: str) -> tuple[list[str], bool]:
    if not given:
        return ([DEMO_API_KEY], False) if is_loopback(host) else ([secrets.token_urlsafe(24)], True)
    check_api_keys(given)
    if DEMO_API_KEY in given and not is_loopback(host):
        raise ValueError(f'the demo key is published; choose another key to serve {host}')
    return list(given), False


def flag_type(convert: Callable[[str], Any], accept: Callable[[Any], Any],
              wanted: str) -> Callable[[str], Any]:
    def checked(text: str) -> Any:
        with contextlib.suppress(ValueError):
            if (value := convert(text)) is not None and accept(value):
                return value
        raise argparse.ArgumentTypeError(f'{wanted}; got {text!r}')
    return checked


def parse_decimal(text: str) -> float | None:
    """Digits with at most one point -> their value; else None: no sign, exponent, _ or space."""
    return float(text) if re.fullmatch(r'[0-9]+(\.[0-9]*)?|\.[0-9]+', text) else None


def parse_delay_flag(text: str) -> dict | None:
    """``[ROUTE=]SECONDS`` -> set_delay()'s arguments, or None if not of that form."""
    route, equals, seconds = text.rpartition('=')
    number = parse_decimal(seconds)
    return None if number is None or equals and not route else {'seconds': number,
                                                                'route': route or None}


port_number = flag_type(parse_whole_number, lambda port: port <= 65535,
                        'a port (--port, or $PORT) is a number from 0 to 65535')
first_id_number = flag_type(parse_whole_number, lambda first: 1 <= first <= INT64_MAX,
                            f'a first id is a whole number from 1 to {INT64_MAX}')
send_seconds = flag_type(parse_decimal, lambda seconds: 0 < seconds <= 3600,
                         'a send timeout is a decimal such as 2.5, more than 0 and at most 3600')
delay_flag = flag_type(parse_delay_flag, lambda delay: delay['seconds'] <= FAULT_SECONDS_MAX
                       and delay['route'] in (None, *OPERATIONS),
                       f'a delay is SECONDS, from 0 to {FAULT_SECONDS_MAX:g}, after ROUTE= (one '
                       f'of {", ".join(OPERATIONS)}) if for its calls alone')
percent = flag_type(lambda text: parse_decimal(text.removesuffix('%')), lambda least: least <= 100,
                    'give a percent from 0 to 100')
ready_file, ca_path = (flag_type(Path, lambda path: not path.is_dir() and path.parent.is_dir(),
                                 f'{what} goes in a folder that exists, and is no folder itself')
                       for what in ('the ready file', 'the CA file'))
host_name = flag_type(str.strip, bool, 'give an address, such as 127.0.0.1 or 0.0.0.0')
existing_file = flag_type(Path, lambda path: path.exists() and not path.is_dir(),
                          'give a file that exists')


class CannotServe(Exception):
    """Why the command line cannot serve, in one line for stderr; its exit status is 1."""


def main(argv: Sequence[str] | None = None, server_class: type[StubServer] = StubServer) -> int:
    """Run the stub until Ctrl-C or SIGTERM; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        from_environment = os.environ.get('PETSTORE_API_KEYS', '').split(',')
        api_keys, generated = choose_api_keys(
            args.api_keys + [key.strip() for key in from_environment if key.strip()], args.host)
        try:  # an address this machine could listen on
            socket.getaddrinfo(args.host, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except (OSError, UnicodeError) as error:
            reason = getattr(error, 'strerror', None) or 'not a host name'
            raise ValueError(f'--host {args.host!r}: {reason}') from None
        for name in args.allowed_hosts:
            parse_allowed_host(name)  # a ValueError, in words, before anything is opened
        if args.allowed_hosts and not is_loopback(args.host):
            raise ValueError('--allow-host goes with a loopback --host; otherwise any Host is '
                             'answered')
        database = os.path.realpath(args.db)  # its log is beside the file itself
        written = {'--ready-file': args.ready_file, '--tls-ca-file': args.tls_ca_file}
        kept = [Path(database + suffix) for suffix in ('', '.log') if args.db != MEMORY_DB]
        for flag, path in written.items():
            if path is not None and any(is_same_file(path, other) for other in kept):
                raise ValueError(f'{flag} {path} names the database or its log, which it would '
                                 'overwrite; give it a name of its own')
        if (name := str(args.tls_ca_file or '')) != name.encode('utf-8', 'replace').decode():
            raise ValueError(f'--tls-ca-file {printable(name)} is not UTF-8, so the ready file '
                             'and the banner cannot name it; give it a UTF-8 name')
        if None not in written.values() and is_same_file(*written.values()):
            raise ValueError('--ready-file and --tls-ca-file name one file; give each its own')
        for flag, path in written.items():
            if path is not None and not left_by_no_stub_running(path):
                raise ValueError(f'{flag} {path} holds something other than a stopped stub\'s '
                                 'file, which it would overwrite, then remove; give it a name of '
                                 'its own')
        if args.tls_key is not None and args.tls_cert is None:
            raise ValueError('--tls-key goes with --tls-cert, the certificate it is the key of')
        tls = (Tls(tls_names(args.host, args.allowed_hosts), args.tls_cert, args.tls_key)
               if args.tls or args.tls_ca_file or args.tls_cert else None)
    except ValueError as error:
        parser.error(str(error))
    except ModuleNotFoundError as error:  # no trustme
        print(f'petstore-stub: {error}', file=sys.stderr)
        return 1
    errors = Console(sys.stderr)
    console = Console(sys.stdout, warnings=errors,
                      name='stdout' if args.quiet else 'the access log')
    if sys.stdout is None:
        errors.log('petstore-stub: stdout is closed; the banner and the access log go nowhere')
    try:
        with contextlib.redirect_stderr(errors):
            serve_store(args, api_keys, generated, console, server_class, tls)
        return 0
    except (CannotServe, DatabaseError, ApiError) as error:
        errors.log(f'petstore-stub: {error}')
        return 1
    finally:
        console.stop()
        errors.stop()


def serve_store(args: argparse.Namespace, api_keys: list[str], generated: bool, console: Console,
                server_class: type[StubServer], tls: Tls | None) -> None:
    # Read first: a fixtures file that cannot be used leaves no new database behind.
    fixtures = None if args.fixtures is None else read_fixtures(args.fixtures)
    with StubStore(None if args.db == MEMORY_DB else args.db, first_id=args.first_id) as store:
        loaded = ''
        if fixtures is not None and len(store):
            loaded = '; --fixtures skipped: the store is not empty (--db :memory: starts afresh)'
        elif fixtures is not None:  # a disk that would not take them: an ApiError
            loaded = f', {len(add_fixtures(store, fixtures))} loaded from fixtures'
        app = create_stub(store, api_keys, STAGING_BASE_PATH if args.staging else BASE_PATH,
                          admin=args.admin, cors=args.cors,
                          journal_size=JOURNAL_SIZE if args.admin else 0,
                          access_log=None if args.quiet else console.log,
                          allowed_hosts=args.allowed_hosts if is_loopback(args.host) else None)
        raise_open_files_limit(CONNECTION_LIMIT + 64)
        server = server_class(app, args.host, args.port, tls=tls, ca_file=args.tls_ca_file,
                              send_timeout=args.send_timeout)
        try:
            server.bind()
        except (OSError, ValueError) as error:
            reason = getattr(error, 'strerror', None) or error
            if getattr(error, 'errno', None) == errno.EADDRINUSE:  # strerror names the address
                reason = (f'{os.strerror(errno.EADDRINUSE)}; choose another port (--port or '
                          '$PORT), or 0 for any free one')
            elif filename := getattr(error, 'filename', None):  # the CA's file
                raise CannotServe(f'cannot write {filename}: {reason}') from None
            raise CannotServe(f'cannot listen on {args.host}:{args.port}: {reason}') from None
        # The ready file before the banner: a stub that cannot write it never says it serves.
        url = server.url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:')
        ready = None
        if args.ready_file is not None:
            document = {'written_by': MARK.format(os.getpid()), 'url': url, 'pid': os.getpid()}
            if args.admin:
                document['admin_url'] = url.removesuffix(app.base_path) + ADMIN_PREFIX.rstrip('/')
            if tls is not None:  # None with a certificate of your own
                document['ca_file'] = server.ca_file and str(server.ca_file.absolute())
            try:
                write_whole(args.ready_file, ready := to_json(document))
            except OSError as error:
                server.stop()
                raise CannotServe(f'cannot write {args.ready_file}: {error.strerror}') from None
        console.log(f'petstore-stub {__version__}: {store_contents(store)}{loaded}')
        if generated:
            console.log(f'generated API key (not published anywhere): {server.api_key}')
        trust = '' if server.ca_file is None else f'--cacert {shlex.quote(str(server.ca_file))} '
        console.log(f"serving {url}  try: curl {trust}-H 'Authorization: Bearer {server.api_key}' "
                    f'{url}/pets')
        console.log(f'or open {url.removesuffix(server.app.base_path)}/ in a browser')
        for delay in args.delay:
            app.set_delay(**delay)
        settings = app.settings()  # as set: a route's last --delay wins, and 0 is none
        for delay in settings['delays']:
            console.log(f'delay: each {delay["route"] or "API"} call waits {delay["seconds"]:g} s '
                        'once its key is accepted')
        try:
            run_until_stopped(server)
            if args.admin:  # a suite in another language drove it: what did it never try?
                print(coverage_line(app.coverage()), file=sys.stderr)
        finally:
            if ready is not None:  # unless another stub has written its own there since
                remove_if_it_holds(args.ready_file, ready)
        console.log(f'petstore-stub stopped: {store_contents(store)}')


def write_whole(path: Path, text: str) -> None:
    """Through a new file beside it, made by mkstemp: a reader sees all of ``text`` or none."""
    missing = not os.path.lexists(path)  # again: it may have come since the flags were checked
    if not missing and not left_by_no_stub_running(path):
        raise OSError(errno.EEXIST, "it holds something other than a stopped stub's file")
    descriptor, temporary = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp',
                                             dir=path.parent)
    try:
        with open(descriptor, 'w', encoding='utf-8') as file:
            file.write(text)
        (os.link if missing else os.replace)(temporary, path)  # a link takes no name made since
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def remove_if_it_holds(path: Path, text: str) -> None:
    with contextlib.suppress(OSError, UnicodeError):
        if path.read_text(encoding='utf-8') == text:
            path.unlink()


def left_by_no_stub_running(path: Path) -> bool:
    """Whether the stub may write over ``path``: missing, empty (as from mktemp), or marked by a
    stub whose process is gone (one killed). Windows has no harmless probe: a mark there is kept."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):  # a link; a device reads empty; a FIFO blocks
            return False
        with open(path, 'rb') as file:
            head = file.read(128)  # the longest mark, 18 digits and a PEM line: 77 bytes
    except FileNotFoundError:
        return True
    except OSError:
        return False
    found = MARKED.match(head)
    if not head or found is None or os.name == 'nt':
        return not head
    if (pid := int(found[1])) == os.getpid():  # its own pid, reused (a container restarted)
        return True
    try:
        os.kill(pid, 0)  # signal 0 only asks whether the process is there
    except (OSError, OverflowError) as error:  # gone; or another user's, or no pid at all
        return isinstance(error, ProcessLookupError)
    with contextlib.suppress(OSError):  # Linux: one killed, not yet reaped (a zombie), is gone
        return Path(f'/proc/{pid}/stat').read_bytes().rpartition(b')')[2].split()[0] == b'Z'
    return False


def is_same_file(path: Path, other: Path) -> bool:
    with contextlib.suppress(OSError):  # one is missing
        return os.path.samefile(path, other)
    return os.path.realpath(path) == os.path.realpath(other)


def store_contents(store: PetStore) -> str:
    return f'{pets_phrase(len(store))} in {getattr(store, "path", None) or "memory"}'


def raise_open_files_limit(wanted: int) -> None:
    with contextlib.suppress(ImportError, ValueError, OSError):  # no resource module on Windows
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def run_until_stopped(server: StubServer) -> None:
    """Serve until stopped. A second signal is ignored: it would cut the log's fold short."""
    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt  # to server.stop(), which lets held requests go

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    finally:
        server.stop()


# -- The pytest fixtures -------------------------------------------------------
# A ``pytest11`` plugin, defined only when pytest runs: serving never imports pytest, nor needs it.

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

    @pytest.fixture(scope='session')
    def petstore_tls(pytestconfig: pytest.Config) -> bool:
        """True serves HTTPS (else the ini option petstore_tls); override (session scope)."""
        return pytestconfig.getini('petstore_tls')

    @pytest.fixture
    def petstore_fixtures() -> str | os.PathLike | bool | None:
        """Loaded before each test: None (nothing), True (the demo animals) or a file."""
        return None

    @pytest.fixture(scope='session')
    def petstore_session_server(petstore_api_key: str, petstore_staging: bool, petstore_tls: bool,
                                request: pytest.FixtureRequest) -> Iterator[StubServer]:
        with serve(api_keys=[petstore_api_key], staging=petstore_staging, tls=petstore_tls,
                   first_id=first_id_option(request.config)) as server:
            yield server
            add_coverage(request.config, server.coverage())

    #: What the session's stubs met of the API, summed (over the pytest-xdist workers too).
    COVERAGE = pytest.StashKey[dict]()

    def add_coverage(config: pytest.Config, report: dict) -> None:
        if (total := config.stash.setdefault(COVERAGE, report)) is report:
            return
        for operation, counts in report['responses'].items():
            for status, count in counts.items():
                total['responses'][operation][status] += count
        for kind, count in report['faults'].items():
            total['faults'][kind] = total['faults'].get(kind, 0) + count
        for operation, called in report['deprecated'].items():
            total['deprecated'].setdefault(operation, {**called, 'calls': 0})
            total['deprecated'][operation]['calls'] += called['calls']
        total['met'] = met_count(total['responses'])
        total['unmatched'] += report['unmatched']

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(node: Any, error: Any) -> None:
        """pytest-xdist: a worker has ended, with its stub's coverage."""
        if (report := getattr(node, 'workeroutput', {}).get('petstore_coverage')) is not None:
            add_coverage(node.config, report)

    def pytest_sessionfinish(session: pytest.Session) -> None:
        config = session.config
        if (report := config.stash.get(COVERAGE, None)) is None:
            return
        if hasattr(config, 'workeroutput'):  # a pytest-xdist worker: the controller reports
            config.workeroutput['petstore_coverage'] = report
            return
        least = ini_option(config, 'coverage_fail_under', percent)
        if least is not None and 100 * report['met'] / report['documented'] < least:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def ini_option(config: pytest.Config, name: str, flag: Callable[[str], Any]) -> Any:
        """An ini option (in TOML, a value or a list), taken as its flag takes it; None if empty."""
        try:
            text = ' '.join(map(str, config.getini(f'petstore_{name}')))  # 'args': shlex's words
            return flag(text) if text else None
        except (argparse.ArgumentTypeError, pytest.UsageError) as error:  # a quote left open
            raise pytest.UsageError(f'petstore_{name}: {error}') from None

    def first_id_option(config: pytest.Config) -> int:
        """The ini option petstore_first_id, as serve() takes it."""
        return ini_option(config, 'first_id', first_id_number) or 1

    def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
        if (report := config.stash.get(COVERAGE, None)) is None or hasattr(config, 'workeroutput'):
            return
        write = terminalreporter.write_line
        share = 100 * report['met'] / report['documented']
        least = ini_option(config, 'coverage_fail_under', percent)
        if config.getini('petstore_coverage'):
            terminalreporter.section('petstore-stub: what the tests met of the API')
            write(f'documented responses met: {report["met"]} of {report["documented"]} '
                  f'({share:.0f}%)')
            for operation, never in never_met(report).items():
                write(f'  never met: {operation} {", ".join(never)}')
            write('faults met: ' + (', '.join(f'{kind} (x{count})' for kind, count
                                              in sorted(report['faults'].items())) or 'none'))
            for operation, called in report['deprecated'].items():
                write(f'deprecated: {operation} called {times_phrase(called["calls"])}. '
                      f'{called["hint"]}')
            if unmatched := report['unmatched']:
                write(f'requests no operation answered ({len(unmatched)}):')
                for line in unmatched[:CALLS_SHOWN]:
                    write(f'  {line}')
                if len(unmatched) > CALLS_SHOWN:
                    write(f'  ... and {len(unmatched) - CALLS_SHOWN} more')
        if least is not None and share < least:  # said even with the section off
            write(f'FAILED: {share:.0f}% of the documented responses met, under '
                  f'petstore_coverage_fail_under = {least:g}', red=True)

    def pytest_addoption(parser: pytest.Parser) -> None:
        parser.addini('petstore_fail_on_bad_requests', type='bool', default=False,
                      help='fail a test whose client sent the petstore_server a malformed request')
        parser.addini('petstore_fail_on_unmatched_requests', type='bool', default=False,
                      help='fail a test whose client sent a request no operation answered')
        parser.addini('petstore_fail_on_unused_faults', type='bool', default=True,
                      help='fail a test that left a fault queued on the petstore_server unused')
        parser.addini('petstore_first_id', type='args', help='the first id the stub gives a new '
                      f'pet, up to {INT64_MAX} ({2 ** 53 + 1}: past what a double holds exactly)')
        parser.addini('petstore_tls', type='bool', default=False,
                      help='serve petstore_server over HTTPS, with a CA made for the session')
        parser.addini('petstore_coverage', type='bool', default=True,
                      help='at the end, say what the tests met of the API through petstore_server')
        parser.addini('petstore_coverage_fail_under', type='args', help='fail the session if the '
                      'tests met less than this share (a percent) of the documented responses')

    def pytest_configure(config: pytest.Config) -> None:
        ini_option(config, 'coverage_fail_under', percent)  # a bad value stops the run at once
        first_id_option(config)
        for name in ('fail_on_bad_requests', 'fail_on_unmatched_requests', 'fail_on_unused_faults',
                     'tls', 'coverage'):  # the true-or-false ones, read now, not at a teardown
            try:
                config.getini(f'petstore_{name}')
            except (ValueError, pytest.UsageError) as error:  # "invalid truth value 'maybe'"
                raise pytest.UsageError(f'petstore_{name}: give true or false ({error})') from None
        config.addinivalue_line('markers', 'petstore_allows_bad_requests: this test sends '
                                'malformed requests on purpose (petstore_fail_on_bad_requests)')
        config.addinivalue_line('markers', 'petstore_allows_unmatched_requests: this test sends '
                                'requests no operation answers on purpose')
        config.addinivalue_line('markers', 'petstore_allows_unused_faults: this test may leave '
                                'a queued fault unused (petstore_fail_on_unused_faults)')

    @pytest.fixture
    def petstore_server(petstore_session_server: StubServer, petstore_fixtures: Any,
                        request: pytest.FixtureRequest) -> Iterator[StubServer]:
        """The session's stub, emptied (store, journal, faults) for this test, which fails on a
        fault left queued and, if asked, on a malformed request (ini options, markers above)."""
        server = petstore_session_server
        server.reset()
        if petstore_fixtures:
            server.load_fixtures(petstore_fixtures)
        yield server
        try:
            server.check()  # the unused faults taken even when allowed: the session ends clean
        except AssertionError as unused:
            if (request.config.getini('petstore_fail_on_unused_faults')
                    and not request.node.get_closest_marker('petstore_allows_unused_faults')):
                raise pytest.fail.Exception(  # from None: one message, not two chained
                    f'in this test, {unused}\n(if the test leaves it unused on purpose, mark it '
                    '@pytest.mark.petstore_allows_unused_faults, or set the ini option '
                    'petstore_fail_on_unused_faults = false)', pytrace=False) from None
        for ini, marker, sent, what in GUARDS:
            if (request.config.getini(ini) and not request.node.get_closest_marker(marker)
                    and (refused := list(filter(sent, server.requests)))):
                pytest.fail(f'the code under test sent {len(refused)} request(s) {what}:' + ''.join(
                    f'\n  {describe_call(entry)}: {(entry["error"] or {}).get("message", "")}'
                    for entry in refused) + f'\n(if the test sends them on purpose, mark it '
                    f'@pytest.mark.{marker})', pytrace=False)

    #: What a test may be failed for sending: ini option, marker, which requests, what they are.
    GUARDS = [('petstore_fail_on_bad_requests', 'petstore_allows_bad_requests',
               is_refused_as_malformed, 'the stub refused as malformed'),
              ('petstore_fail_on_unmatched_requests', 'petstore_allows_unmatched_requests',
               lambda entry: entry['unmatched'], 'that no operation answered')]

    @pytest.fixture
    def petstore_app(petstore_api_key: str, petstore_staging: bool, petstore_fixtures: Any,
                     pytestconfig: pytest.Config) -> Iterator[Any]:
        """A webtest.TestApp over a fresh in-process app, the Authorization header preset; what
        its calls met counts in the session's coverage, as petstore_server's do."""
        try:
            import webtest
        except ModuleNotFoundError:
            pytest.fail('the petstore_app fixture needs WebTest: '
                        "pip install 'petstore-stub[pytest]'", pytrace=False)
        store = StubStore(first_id=first_id_option(pytestconfig))
        app = create_stub(store, [petstore_api_key], admin=True,
                          base_path=STAGING_BASE_PATH if petstore_staging else BASE_PATH)
        if petstore_fixtures:
            app.load_fixtures(petstore_fixtures)
        client = webtest.TestApp(app)
        client.authorization = ('Bearer', petstore_api_key)
        yield client
        add_coverage(pytestconfig, app.coverage())


if __name__ == '__main__':
    raise SystemExit(main())
