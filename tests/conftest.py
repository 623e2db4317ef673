from __future__ import annotations

import compileall
import http.client
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import IO, Any, ClassVar, cast
from urllib.parse import urlsplit

import pytest
import webtest

import petstore_stub as stub

KEY = stub.DEMO_API_KEY
AUTH = {'Authorization': f'Bearer {KEY}'}
PREFLIGHT = {'Origin': 'https://demo.example', 'Access-Control-Request-Method': 'POST',
             'Access-Control-Request-Headers': 'authorization, content-type'}

#: The document the stub serves: tests take its operations and responses from it, not a count.
DOCUMENT = stub.openapi_template('openapi.json')
#: Each operation's documented statuses, in the document's order, as coverage counts them.
DOCUMENTED = {operation['operationId']: [status for status in operation['responses']
                                         if status != 'default']
              for methods in DOCUMENT['paths'].values() for operation in methods.values()
              if isinstance(operation, dict) and 'responses' in operation}
#: Each path of the API as a client asks for it (a pet's id 1), with the methods it takes.
METHODS = {f'/v1{path.replace("{petId}", "1")}': {method.upper() for method in methods
                                                  if method in ('get', 'put', 'post', 'delete',
                                                                'patch', 'head', 'options')}
           for path, methods in DOCUMENT['paths'].items()}
#: A method each path does not take, with the path: a 405.
NOT_ALLOWED = [(method, path) for path, methods in METHODS.items()
               for method in ('DELETE', 'PUT', 'PATCH', 'POST') if method not in methods]


def never_met(*met: str) -> dict[str, list[str]]:
    """Each operation's documented statuses but those ``met`` (``'listPets 200'``)."""
    return {operation: [status for status in statuses if f'{operation} {status}' not in met]
            for operation, statuses in DOCUMENTED.items()}


#: Tests in the slow tier whose files cannot carry the mark: the README shows them word for word.
SLOW_README_EXAMPLES = {
    # It waits out a real Retry-After of 1 second, as test_faults' slow retry test does.
    'test_example_client.py::test_the_client_retries_a_503_once_the_server_allows',
}


def pytest_configure(config: pytest.Config) -> None:
    """The suite starts over a hundred processes that import the module. Where Python writes no
    bytecode (PYTHONDONTWRITEBYTECODE), each would compile it again: compile it once, here."""
    if sys.dont_write_bytecode and not hasattr(config, 'workerinput'):
        compileall.compile_file(stub.__file__, quiet=2)  # unless its bytecode is current


@pytest.hookimpl(wrapper=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> Generator[None, int, int]:
    """``-n auto``: a worker for each core, and one more where the slow tests run: it runs while
    the others wait on a process, a browser or a socket. The fast tier waits on none, and a worker
    more would only collect the tests once more. PYTEST_XDIST_AUTO_NUM_WORKERS, if set, decides."""
    cores = yield
    fast = config.option.markexpr.replace(' ', '') == 'notslow'
    return cores if fast or os.environ.get('PYTEST_XDIST_AUTO_NUM_WORKERS') else cores + 1


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split('/')[-1] in SLOW_README_EXAMPLES:
            item.add_marker(pytest.mark.slow)


def make_client(app: stub.StubApp) -> webtest.TestApp:
    client = webtest.TestApp(app)
    client.authorization = ('Bearer', KEY)
    return client


@pytest.fixture
def app() -> stub.StubApp:
    return stub.create_stub()


@pytest.fixture
def client(app: stub.StubApp) -> webtest.TestApp:
    """The app in-process, with the demo key preset."""
    return make_client(app)


@pytest.fixture(params=['plain', 'memory', 'file'])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[stub.PetStore]:
    """Each store test runs over part 1's PetStore, and the stub's in memory and in a file."""
    if request.param == 'plain':  # nothing to close
        yield stub.PetStore()
        return
    with stub.StubStore(None if request.param == 'memory' else tmp_path / 'pets.json') as store:
        yield store


def ten_times(call: Callable[[], Any]) -> float:
    """Ten times what ``call`` takes alone, measured now: a bound on time that a loaded machine
    stretches as it stretches the call itself."""
    started = time.monotonic()
    call()
    return 10 * (time.monotonic() - started)


def wait_until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, 'the condition never held'
        time.sleep(0.001)


def listed(store: stub.PetStore, limit: int = 100, status: str | None = None) -> list[dict]:
    """The pets that listPets would send."""
    return json.loads(store.list_json(limit, status))


def fetched(store: stub.PetStore, pet_id: int) -> dict | None:
    """The pet that getPet would send, or None."""
    text = store.get_json(pet_id)
    return None if text is None else json.loads(text)


# -- the stub on real sockets --------------------------------------------------------

MODULE = Path(stub.__file__)
JSON = 'application/json'
JSON_HEADERS = {**AUTH, 'Content-Type': 'application/json'}


def connect(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or '', parts.port, timeout=10)


def call_once(url: str, method: str, path: str, body=None) -> tuple[int, object]:
    connection = connect(url)
    try:
        return call(connection, method, path, body)
    finally:
        connection.close()


def call(connection, method: str, path: str, body=None) -> tuple[int, object]:
    payload = None if body is None else json.dumps(body)
    connection.request(method, path, payload, JSON_HEADERS)
    response = connection.getresponse()
    data = response.read()
    return response.status, json.loads(data) if data else None  # a 204 has no body


def rss_mb(pid: int) -> float:
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
    raise AssertionError('no VmRSS')


def raw_post(port: int, body: bytes, key: bool = True) -> int:
    """POST /v1/pets over a fresh connection; the status."""
    with socket.create_connection(('127.0.0.1', port), timeout=10) as connection:
        connection.sendall(
            b'POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
            + (b'Authorization: Bearer petstore-demo-key\r\n' if key else b'')
            + b'Connection: close\r\nContent-Length: %d\r\n\r\n' % len(body) + body)
        data = b''
        while chunk := connection.recv(65536):
            data += chunk
    return int(data.split(b' ', 2)[1])


def allow_open_files(needed: int, what: str) -> None:
    """Raise this process's open-files limit as the stub raises its own, or skip the test."""
    stub.raise_open_files_limit(4096)
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        pytest.skip(f'this process may open {soft} files; the test holds {what}')


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None, url
    return port


def gone_pid() -> int:
    """The pid of a process that has ended, as a killed stub's has."""
    process = subprocess.Popen([sys.executable, '-c', 'pass'])
    process.wait()
    return process.pid


def send(port: int, method: str, path: str, host: str | None = None, body=None,
         headers=None) -> tuple[int, dict[str, str], bytes]:
    """One request over a fresh connection, with ``host`` as its Host header; the status,
    the headers (names in lower case) and the body."""
    connection = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    sent = {**AUTH, **(headers or {})}
    if host is not None:
        sent['Host'] = host.format(port=port)
    if body is not None:
        sent['Content-Type'] = JSON
    try:
        connection.request(method, path, None if body is None else json.dumps(body), sent)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.fixture(autouse=True)
def no_stub_process_outlives_its_test():
    """Kill what a failing test left running."""
    yield
    while StubProcess.started:
        process = StubProcess.started.pop().process
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            stream.close()


class StubProcess:
    """``python petstore_stub.py ...`` in a child process, port read from its banner."""

    started: ClassVar[list[StubProcess]] = []

    def __init__(self, *args: str, cwd: Path | None = None, script: Path = MODULE) -> None:
        StubProcess.started.append(self)
        self.process = subprocess.Popen(
            [sys.executable, str(script), '--port', '0', *args], cwd=cwd,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Both are PIPEs, never None.
        self.stdout, self.stderr = cast(IO[str], self.process.stdout), cast(IO[str],
                                                                             self.process.stderr)
        self.banner = []
        for line in self.stdout:
            self.banner.append(line)
            if line.startswith('serving '):
                self.url = line.split()[1]
            if line.startswith('or open '):  # the banner's last line
                return
        raise AssertionError(f'no banner: {self.banner} {self.stderr.read()}')

    def stop(self, signum: int, stdout_closed: bool = False) -> int:
        """Send ``signum`` and wait for the exit; keep what it printed on stderr."""
        self.process.send_signal(signum)
        code = self.process.wait(timeout=10)
        if not stdout_closed:
            self.stdout.close()
        self.process_stderr = self.stderr.read()
        self.stderr.close()
        return code

    def kill(self) -> None:
        """kill -9: no clean stop, no fold."""
        self.process.kill()
        self.process.wait(timeout=10)
        self.stdout.close()
        self.stderr.close()


# -- main() without serving ------------------------------------------------------------

#: What the servers below recorded while they would have served, in order.
SERVED: list = []


class NotServing(stub.StubServer):
    """For ``main([...], server_class=NotServing)``: it binds, so ``--port 0`` learns a real
    port, then records itself in SERVED instead of serving, and returns as if stopped at once."""

    def serve_forever(self) -> None:
        SERVED.append(self.recorded())

    def recorded(self) -> object:
        return self


class ServingOnce(NotServing):
    """A NotServing that also makes one authorised request to the app, in process."""

    def serve_forever(self) -> None:
        super().serve_forever()
        key = self.app.api_keys[0]
        webtest.TestApp(self.app).get(f'{self.app.base_path}/pets?limit=100',
                                      headers={'Authorization': f'Bearer {key}'})


class NotBound(NotServing):
    """A NotServing that does not bind either: for port 8080, which may be taken here, or a
    --host that is not this machine's."""

    def bind(self) -> None:
        pass


class NotBoundServingOnce(NotBound, ServingOnce):
    """A ServingOnce that does not bind."""


def recording(what: Callable[[stub.StubServer], object]) -> type[NotServing]:
    """A NotServing that records ``what(server)`` while it would have served, not the server."""
    return type('Recording', (NotServing,), {'recorded': what})
