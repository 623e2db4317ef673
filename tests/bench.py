"""Benchmark: the stub beside an independent reference app, in one run.

    python tests/bench.py            # about two minutes
    python tests/bench.py --quick    # seconds; a smoke test, not a measurement
    python tests/bench.py --crowd    # a new client's wait beside idle, slow and unread connections
    python tests/bench.py --layers   # what the fixture server adds to a request, in process
    python tests/bench.py --tls      # the stub over HTTPS beside itself over plain HTTP

The stub runs as a user runs it: ``python petstore_stub.py --db FILE --quiet``, a
durable file of 1,000 pets. The reference is a plain bottle app on ``waitress.serve``
with the stub's 16 threads, in a process of its own; it imports nothing from
petstore_stub, so whatever the stub's server, middleware or store cost shows in the
ratio instead of cancelling out of it.

The load comes from wrk when it is installed (keep-alive, from a process of its own);
otherwise from keep-alive clients in threads of this process, which saturate first, and
the output says so. Beside req/s each figure gives the server's CPU time per request,
read from /proc: on a shared machine it is the steadier of the two. Each figure is the
median of rounds that alternate the two servers, and each ratio the median of the
ratios of rounds run a moment apart.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KEY = 'bench-key'
AUTH = f'Authorization: Bearer {KEY}\r\n'
NEW_PET = json.dumps({'name': 'Bench', 'categoryId': 7, 'status': 'available'})
STATUSES = ('available', 'pending', 'sold')
PATHS = {'list': '/v1/pets?limit=20&status=available', 'get': '/v1/pets/1', 'create': '/v1/pets',
         # Other lists and another pet than perf-check's: no answer is kept from one to the next.
         'list-100': '/v1/pets?limit=100', 'list-sold': '/v1/pets?status=sold&limit=5',
         'get-500': '/v1/pets/500'}

#: The reference: the least a bottle Pet Store app does, on plain waitress. A bearer check,
#: limit bounds, a dict of 1,000 pets; creates go into the dict, nothing to disk.
REFERENCE_APP = '''
import json, sys, threading
import bottle, waitress

PORT, KEY = int(sys.argv[1]), sys.argv[2]
ST = ('available', 'pending', 'sold')
PETS = {i: {'id': i, 'name': f'pet{i}', 'categoryId': 1 + i % 5, 'status': ST[i % 3]}
        for i in range(1, 1001)}
BY_STATUS = {status: [p for p in PETS.values() if p['status'] == status] for status in ST}
NEXT, LOCK = [1001], threading.Lock()
app = bottle.Bottle()


def error(status, code, message):
    return bottle.HTTPResponse(json.dumps({'code': code, 'message': message, 'status': status}),
                               status=status, content_type='application/json')


@app.hook('before_request')
def check_bearer():
    if bottle.request.headers.get('Authorization') != f'Bearer {KEY}':
        raise error(401, 'unauthorized', 'a valid bearer key is required')


@app.get('/v1/pets')
def list_pets():
    try:
        limit = int(bottle.request.query.get('limit', 20))
    except ValueError:
        return error(400, 'invalid_parameter', 'limit')
    if not 1 <= limit <= 100:
        return error(400, 'invalid_parameter', 'limit')
    status = bottle.request.query.get('status')
    pets = (list(PETS.values()) if status is None else BY_STATUS.get(status, []))[:limit]
    bottle.response.content_type = 'application/json'
    return json.dumps(pets)


@app.get('/v1/pets/<pet_id:int>')
def get_pet(pet_id):
    pet = PETS.get(pet_id)
    if pet is None:
        return error(404, 'not_found', 'no such pet')
    bottle.response.content_type = 'application/json'
    return json.dumps(pet)


@app.post('/v1/pets')
def create_pet():
    doc = json.loads(bottle.request.body.read())
    if not isinstance(doc.get('name'), str) or not isinstance(doc.get('categoryId'), int):
        return error(400, 'invalid_body', 'name and categoryId')
    with LOCK:
        doc['id'] = NEXT[0]
        NEXT[0] += 1
        PETS[doc['id']] = doc
    bottle.response.status = 201
    bottle.response.content_type = 'application/json'
    return json.dumps(doc)


waitress.serve(app, host='127.0.0.1', port=PORT, threads=16, _quiet=True)  # as the stub
'''


# -- The two servers ------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def write_db(path: Path, count: int) -> None:
    pets = {str(n): {'name': f'pet{n}', 'categoryId': 1 + n % 5, 'status': STATUSES[n % 3]}
            for n in range(1, count + 1)}
    path.write_text(json.dumps({'pets': pets}), encoding='utf-8')
    Path(f'{path}.log').unlink(missing_ok=True)


class Process:
    """A server in a process of its own, ready once it answers a list with 200."""

    def __init__(self, command: list[str], port: int, quiet: bool = False,
                 tls: bool = False) -> None:
        self.port = port
        started = time.perf_counter()
        self.popen = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL if quiet else None)
        self.cold_start = wait_for_200(port, started, self.popen, tls)

    def cpu_seconds(self) -> float:
        """The server's CPU time so far, user and system, from /proc (Linux)."""
        fields = Path(f'/proc/{self.popen.pid}/stat').read_text().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')

    def rss_mb(self) -> float:
        for line in Path(f'/proc/{self.popen.pid}/status').read_text().splitlines():
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
        return float('nan')

    def stop(self) -> None:
        self.popen.terminate()
        self.popen.wait(timeout=10)


def start_stub(db: Path, imported: bool = False, tls: bool = False, *flags: str) -> Process:
    """``python petstore_stub.py``, which compiles the file at each start; or, ``imported``,
    the module from its cached bytecode, as the installed ``petstore-stub`` command runs it."""
    port = free_port()
    program = ['-m', 'petstore_stub'] if imported else [str(ROOT / 'petstore_stub.py')]
    return Process([sys.executable, *program, '--port', str(port), '--db', str(db),
                    '--api-key', KEY, '--quiet', *(['--tls'] if tls else []), *flags],
                   port, tls=tls)


def start_reference(folder: Path) -> Process:
    script = folder / 'reference_app.py'
    script.write_text(REFERENCE_APP, encoding='utf-8')
    port = free_port()
    # waitress's defaults log a warning for each request that waits for a worker.
    return Process([sys.executable, str(script), str(port), KEY], port, quiet=True)


def wait_for_200(port: int, started: float, process: subprocess.Popen,
                 tls: bool = False) -> float:
    request = f'GET /v1/pets?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}\r\n'.encode()
    context = ssl._create_unverified_context()  # a load generator checks no certificate either
    while time.perf_counter() - started < 30:
        if process.poll() is not None:
            raise RuntimeError(f'the server exited with status {process.returncode}')
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=5) as conn:
                if tls:
                    conn = context.wrap_socket(conn)
                conn.sendall(request)
                if conn.recv(64)[8:13] == b' 200 ':
                    return time.perf_counter() - started
        except OSError:
            time.sleep(0.002)
    raise RuntimeError(f'no server answered on port {port}')


# -- Load -----------------------------------------------------------------------

def wrk_load(port: int, operation: str, clients: int, seconds: float, folder: Path,
             scheme: str = 'http') -> dict:
    """wrk, keep-alive, from a process of its own: req/s and the requests it sent."""
    command = ['wrk', f'-t{min(2, clients)}', f'-c{clients}', f'-d{max(1, round(seconds))}s',
               '-H', f'Authorization: Bearer {KEY}']
    if operation == 'create':
        script = folder / 'create.lua'
        script.write_text(f'wrk.method = "POST"\nwrk.body = \'{NEW_PET}\'\n'
                          'wrk.headers["Content-Type"] = "application/json"\n')
        command += ['-s', str(script)]
    run = subprocess.run(command + [f'{scheme}://127.0.0.1:{port}{PATHS[operation]}'],
                         capture_output=True, text=True, timeout=seconds + 30)
    lines = run.stdout.splitlines()
    try:
        rps = float(next(line.split()[1] for line in lines if line.startswith('Requests/sec')))
        count = int(next(line.split()[0] for line in lines if 'requests in' in line))
    except StopIteration:
        raise RuntimeError(f'wrk failed: {(run.stderr or run.stdout).strip()[-300:]}') from None
    failures = sum(1 for line in lines if 'Non-2xx' in line or 'Socket errors' in line)
    return {'rps': rps, 'count': count, 'failures': failures}


def request_bytes(operation: str) -> bytes:
    if operation == 'create':
        body = NEW_PET.encode()
        return (f'POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}'
                f'Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n'
                ).encode() + body
    return f'GET {PATHS[operation]} HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}\r\n'.encode()


def read_response(conn: socket.socket, buffer: bytearray) -> int:
    while b'\r\n\r\n' not in buffer:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError('server closed the connection')
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b'\r\n\r\n')
    length = 0
    for line in head.split(b'\r\n')[1:]:
        name, _, value = line.partition(b':')
        if name.strip().lower() == b'content-length':
            length = int(value)
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError('server closed the connection')
        rest += chunk
    buffer[:] = rest[length:]
    return int(head[9:12])


def thread_load(port: int, operation: str, clients: int, seconds: float,
                folder: Path | None = None) -> dict:
    """Keep-alive clients in threads of this process, each sending requests back to back."""
    request = request_bytes(operation)
    expected = 201 if operation == 'create' else 200
    counts, failures = [0] * clients, [0]
    barrier = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(number: int) -> None:
        conn, buffer = socket.create_connection(('127.0.0.1', port)), bytearray()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        barrier.wait()
        with conn:
            while time.perf_counter() < deadline[0]:
                conn.sendall(request)
                if read_response(conn, buffer) != expected:
                    failures[0] += 1
                counts[number] += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    deadline[0] = time.perf_counter() + seconds
    barrier.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return {'rps': sum(counts) / (time.perf_counter() - began), 'count': sum(counts),
            'failures': failures[0]}


def choose_load(use_wrk: bool | None = None):
    """wrk if it is installed (or as asked), else the clients in threads."""
    if use_wrk is None:
        use_wrk = shutil.which('wrk') is not None
    return wrk_load if use_wrk else thread_load


def measure(process: Process, load, operation: str, clients: int, seconds: float,
            folder: Path) -> dict:
    """One load on one server: req/s, and the server's CPU milliseconds per request."""
    before = process.cpu_seconds()
    figures = load(process.port, operation, clients, seconds, folder)
    figures['cpu_ms'] = (process.cpu_seconds() - before) * 1000 / max(1, figures['count'])
    return figures


def side_by_side(stub: Process, reference: Process, load, operation: str, clients: int,
                 seconds: float, rounds: int, folder: Path) -> dict:
    """Rounds of the same load on each server, alternating which goes first."""
    figures: dict[str, list[dict]] = {'stub': [], 'reference': []}
    servers = {'stub': stub, 'reference': reference}
    for number in range(rounds):
        for name in (('stub', 'reference') if number % 2 == 0 else ('reference', 'stub')):
            figures[name].append(measure(servers[name], load, operation, clients, seconds, folder))
    s, r = figures['stub'], figures['reference']
    return {
        'stub': {key: statistics.median(f[key] for f in s) for key in s[0]},
        'reference': {key: statistics.median(f[key] for f in r) for key in r[0]},
        'rps_ratio': statistics.median(a['rps'] / b['rps'] for a, b in zip(s, r)),
        'cpu_ratio': statistics.median(a['cpu_ms'] / b['cpu_ms'] for a, b in zip(s, r)),
    }


# -- Report ---------------------------------------------------------------------

def table(first: Process, second: Process, names: tuple[str, str], load, operations: tuple,
          client_counts: tuple, settings: argparse.Namespace, folder: Path) -> None:
    """A row for each operation and count of clients: ``first`` beside ``second``, warmed up."""
    a, b = names
    print(f'\n{"operation":<9} {"clients":>7} {a + " req/s":>11} {b + " req/s":>11} {"ratio":>6}'
          f' {a + " CPU ms/req":>17} {b + " CPU ms/req":>17} {"ratio":>6}')
    for operation in operations:
        for clients in client_counts:
            if not settings.quick:  # a smoke test needs no warm-up
                load(first.port, operation, clients, 0.5, folder)
                load(second.port, operation, clients, 0.5, folder)
            f = side_by_side(first, second, load, operation, clients, settings.seconds,
                             settings.rounds, folder)
            s, r = f['stub'], f['reference']
            failed = ' FAILURES' if s['failures'] or r['failures'] else ''
            print(f'{operation:<9} {clients:>7} {s["rps"]:>11.0f} {r["rps"]:>11.0f} '
                  f'{f["rps_ratio"]:>5.2f}x {s["cpu_ms"]:>17.3f} {r["cpu_ms"]:>17.3f} '
                  f'{f["cpu_ratio"]:>5.2f}x{failed}')


def compare(settings: argparse.Namespace, folder: Path, load) -> None:
    write_db(folder / 'stub.json', 1_000)
    stub, reference = start_stub(folder / 'stub.json'), start_reference(folder)
    try:
        table(stub, reference, ('stub', 'ref'), load, ('get', 'create') if settings.quick
              else ('list', 'list-100', 'list-sold', 'get', 'get-500', 'create'),
              (16,) if settings.quick else (1, 16), settings, folder)
        print(f'\nRSS after load: stub {stub.rss_mb():.1f} MB, reference {reference.rss_mb():.1f} MB')
    finally:
        stub.stop()
        reference.stop()


def startup_and_memory(settings: argparse.Namespace, folder: Path) -> None:
    """Launch to the first 200 with 1,000 pets, and the memory held idle, beside the reference."""
    import py_compile
    py_compile.compile(str(ROOT / 'petstore_stub.py'))  # as pip does at install
    db = folder / 'start.json'
    cold: dict[str, list[float]] = {'script': [], 'command': [], 'reference': []}
    idle = []
    for _ in range(settings.rounds if settings.quick else max(5, settings.rounds)):
        for form in ('script', 'command'):
            write_db(db, 1_000)
            stub = start_stub(db, imported=form == 'command')
            cold[form].append(stub.cold_start)
            if form == 'script':
                time.sleep(0.2)
                idle.append(stub.rss_mb())
            stub.stop()
        reference = start_reference(folder)
        cold['reference'].append(reference.cold_start)
        reference_rss = reference.rss_mb()
        reference.stop()
    ms = {form: statistics.median(times) * 1000 for form, times in cold.items()}
    ratio = {form: statistics.median(s / r for s, r in zip(cold[form], cold['reference']))
             for form in ('script', 'command')}
    print(f'\ncold start to first 200, 1,000 pets: reference {ms["reference"]:.0f} ms; '
          f'python petstore_stub.py {ms["script"]:.0f} ms ({ratio["script"]:.2f}x); '
          f'from bytecode, as the petstore-stub command {ms["command"]:.0f} ms '
          f'({ratio["command"]:.2f}x)')
    print(f'idle RSS, 1,000 pets: stub {statistics.median(idle):.1f} MB, '
          f'reference {reference_rss:.1f} MB')


def scale(settings: argparse.Namespace, folder: Path, load) -> None:
    """The same stub with 100 times the pets: what a larger file costs a request."""
    sizes = (1_000, 10_000) if settings.quick else (1_000, 100_000)
    print(f'\nthe stub with {sizes[1]:,} pets against {sizes[0]:,} (16 clients, req/s)')
    processes = {}
    for count in sizes:
        write_db(folder / f'scale{count}.json', count)
        processes[count] = start_stub(folder / f'scale{count}.json')
    try:
        for operation in ('get',) if settings.quick else ('list', 'get', 'create'):
            small, large = processes[sizes[0]], processes[sizes[1]]
            f = side_by_side(large, small, load, operation, 16, settings.seconds,
                             settings.rounds, folder)
            print(f'{operation:<9} {sizes[0]:>7,} pets: {f["reference"]["rps"]:>7.0f}  '
                  f'{sizes[1]:>7,} pets: {f["stub"]["rps"]:>7.0f}  ratio {f["rps_ratio"]:.2f}x')
    finally:
        for process in processes.values():
            process.stop()


def fixture_cost(settings: argparse.Namespace) -> None:
    """What the pytest fixture costs a test: a reset and one request, in process."""
    sys.path.insert(0, str(ROOT))
    import http.client

    import petstore_stub

    with petstore_stub.serve() as server:
        conn = http.client.HTTPConnection('127.0.0.1', server.port)
        rounds = 200 if settings.quick else 2000
        started = time.perf_counter()
        for _ in range(rounds):
            server.reset()
            conn.request('GET', '/v1/pets', headers=server.headers)
            conn.getresponse().read()
        per_test = (time.perf_counter() - started) / rounds
        conn.close()
    print(f'\npytest fixture, reset plus one request: {per_test * 1000:.3f} ms per test')


def layers_cost(settings: argparse.Namespace) -> None:
    """What the fixture server's layers add to one request over the plain API (create_stub()
    against create_app(), each over a store of 1,000 pets), in process: WSGI calls in a loop."""
    sys.path.insert(0, str(ROOT))
    import io

    import petstore_stub

    def start_response(status: str, headers: list, exc_info: object = None) -> None:
        return None

    def per_call(app: Any, path: str, query: str, calls: int) -> float:
        environ = {'REQUEST_METHOD': 'GET', 'PATH_INFO': path, 'QUERY_STRING': query,
                   'SCRIPT_NAME': '', 'SERVER_NAME': '127.0.0.1', 'SERVER_PORT': '8080',
                   'SERVER_PROTOCOL': 'HTTP/1.1', 'HTTP_HOST': '127.0.0.1:8080',
                   'HTTP_AUTHORIZATION': f'Bearer {petstore_stub.DEMO_API_KEY}',
                   'REMOTE_ADDR': '127.0.0.1', 'wsgi.url_scheme': 'http',
                   'wsgi.errors': sys.stderr}
        started = time.perf_counter()
        for _ in range(calls):
            for _chunk in app({**environ, 'wsgi.input': io.BytesIO()}, start_response):
                pass
        return (time.perf_counter() - started) / calls * 1e6

    apps = {}
    for name, make in (('create_app', petstore_stub.create_app),
                       ('create_stub', lambda store: petstore_stub.create_stub(
                           store, admin=True, allowed_hosts=()))):
        store = petstore_stub.StubStore()
        store.add_many([{'name': f'pet{i}', 'categoryId': 1, 'status': STATUSES[i % 3]}
                        for i in range(1000)])
        apps[name] = make(store)
    calls = 300 if settings.quick else 3000
    print('\nin process, a WSGI call      create_app   create_stub   the layers add')
    for operation, path, query in (('getPet', '/v1/pets/1', ''),
                                   ('listPets', '/v1/pets', 'limit=20&status=available')):
        times: dict[str, list[float]] = {name: [] for name in apps}
        for _ in range(3 if settings.quick else 9):  # rounds alternate the two apps
            for name, app in apps.items():
                times[name].append(per_call(app, path, query, calls))
        plain, stub = (min(times[name]) for name in apps)  # as timeit advises: noise only adds
        print(f'{operation:<28} {plain:8.1f} us  {stub:9.1f} us  {stub - plain:10.1f} us')


def crowd(folder: Path) -> None:
    """How long a new client waits while idle and slowloris connections hold the server."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(8192, hard)), hard))
    request = f'GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}\r\n'.encode()
    print('idle  slow  new client: p50 ms  max ms  answered')
    write_db(folder / 'crowd.json', 1_000)
    for idle, slow in ((0, 0), (500, 100), (900, 95), (1000, 100)):
        stub = start_stub(folder / 'crowd.json')
        crowd_sockets = []
        try:
            for _ in range(idle):
                crowd_sockets.append(socket.create_connection(('127.0.0.1', stub.port)))
            for _ in range(slow):
                connection = socket.create_connection(('127.0.0.1', stub.port))
                connection.sendall(b'GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a\r\n')
                crowd_sockets.append(connection)
            waits, answered = [], 0
            for _ in range(20):
                started = time.perf_counter()
                try:
                    with socket.create_connection(('127.0.0.1', stub.port), timeout=2) as conn:
                        conn.sendall(request)
                        if conn.recv(64)[8:13] == b' 200 ':
                            answered += 1
                except OSError:
                    pass
                waits.append((time.perf_counter() - started) * 1000)
            print(f'{idle:4} {slow:5}  {statistics.median(waits):18.2f} {max(waits):7.1f}'
                  f'  {answered:4}/20')
        finally:
            for connection in crowd_sockets:
                connection.close()
            stub.stop()
    unread(folder)


def unread(folder: Path, clients: int = 32, timeout: float = 10) -> None:
    """A new client's wait beside clients that each pipeline three 20 MB lists and read none,
    with small receive buffers: each holds its own connection until its send timeout closes it."""
    pets = {str(n): {'name': 'x' * 200_000, 'categoryId': 1, 'status': 'available'}
            for n in range(1, 101)}
    (folder / 'large.json').write_text(json.dumps({'pets': pets}), encoding='utf-8')
    stub = start_stub(folder / 'large.json', False, False, '--send-timeout', str(timeout))
    lists = f'GET /v1/pets?limit=100 HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}\r\n'.encode() * 3
    unread_sockets = []
    try:
        started = time.perf_counter()
        for _ in range(clients):
            connection = socket.socket()
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            connection.connect(('127.0.0.1', stub.port))
            connection.sendall(lists)
            unread_sockets.append(connection)
        time.sleep(1)
        asked = time.perf_counter()
        with socket.create_connection(('127.0.0.1', stub.port), timeout=120) as conn:
            conn.sendall(f'GET /v1/pets?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}\r\n'.encode())
            status = conn.recv(64)[9:12].decode()
        waited = time.perf_counter() - asked
        print(f'\n{clients} clients reading none, send timeout {timeout:g} s: a new client asking '
              f'{asked - started:.1f} s after them answered {status} {waited:.1f} s later')
    finally:
        for connection in unread_sockets:
            connection.close()
        stub.stop()


def over_tls(settings: argparse.Namespace, folder: Path) -> None:
    """The stub over HTTPS (--tls) beside the stub over plain HTTP, with wrk, keep-alive."""
    if shutil.which('wrk') is None:
        print('\n--tls needs wrk (apt-get install wrk)')
        return
    write_db(folder / 'https.json', 1_000)
    write_db(folder / 'http.json', 1_000)
    secure, plain = start_stub(folder / 'https.json', tls=True), start_stub(folder / 'http.json')

    def load(port: int, operation: str, clients: int, seconds: float, folder: Path) -> dict:
        return wrk_load(port, operation, clients, seconds, folder,
                        scheme='https' if port == secure.port else 'http')
    try:
        table(secure, plain, ('https', 'http'), load,
              ('get',) if settings.quick else ('get', 'list'), (16,) if settings.quick else (1, 16),
              settings, folder)
    finally:
        secure.stop()
        plain.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='a smoke test, in a few seconds')
    parser.add_argument('--crowd', action='store_true',
                        help="a new client's wait beside idle, slow and unread connections")
    parser.add_argument('--layers', action='store_true',
                        help='what the fixture server adds to a request, in process')
    parser.add_argument('--tls', action='store_true',
                        help='the stub over HTTPS beside itself over plain HTTP (needs wrk)')
    settings = parser.parse_args(argv)
    if settings.layers:
        layers_cost(settings)
        return 0
    # A smoke run loads from threads for 0.3 s, below the whole second that wrk counts in.
    load = choose_load(use_wrk=False if settings.quick else None)
    settings.seconds = 0.3 if settings.quick else 3
    settings.rounds = 1 if settings.quick else 3
    source = ('wrk, 16 keep-alive connections from a process of its own' if load is wrk_load
              else 'keep-alive clients in threads of this process, for a smoke run' if settings.quick
              else 'NO wrk here: keep-alive clients in threads of this process, which saturate '
                   'before the servers do (apt-get install wrk for the real figures)')
    print(f'machine: {platform.machine()}, {os.cpu_count()} cores, Python '
          f'{platform.python_version()}; {settings.rounds} alternating round(s) of '
          f'{settings.seconds} s per figure\nload: {source}')
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if settings.crowd:
            crowd(folder)
            return 0
        if settings.tls:
            over_tls(settings, folder)
            return 0
        compare(settings, folder, load)
        startup_and_memory(settings, folder)
        scale(settings, folder, load)
        fixture_cost(settings)
        layers_cost(settings)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
