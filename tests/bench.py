"""Benchmark: the stub beside a bare bottle app on the same server, in one run.

    python tests/bench.py            # about a minute and a half
    python tests/bench.py --quick    # a few seconds; a smoke test, not a measurement
    python tests/bench.py --servers  # both apps under waitress (16 and 4 threads), cheroot, wsgiref
    python tests/bench.py --crowd    # a new client's wait beside idle and slow connections

Each figure is the median of interleaved rounds (stub, bare; bare, stub; ...),
so that the machine's drift hits both alike. The ratio to the bare app is the
figure to judge by: the median of the ratios of rounds run a moment apart.
The load comes from keep-alive HTTP/1.1 clients in threads of this process,
on the same cores as the servers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = 'bench-key'
AUTH = f'Authorization: Bearer {KEY}\r\n'
NEW_PET = json.dumps({'name': 'Bench', 'categoryId': 7, 'status': 'available'}).encode()


# -- Servers under test -------------------------------------------------------

def bare_app():
    """What the stack gives with no store and no checks: a fixed list."""
    import bottle

    pets = [{'id': n, 'name': f'pet{n}', 'categoryId': 1, 'status': 'available'}
            for n in range(1, 21)]
    app = bottle.Bottle()

    @app.get('/v1/pets')
    def list_pets():
        bottle.response.content_type = 'application/json'
        return json.dumps(pets)

    @app.get('/v1/pets/<pet_id>')
    def get_pet(pet_id):
        bottle.response.content_type = 'application/json'
        return json.dumps(pets[int(pet_id) % 20])

    @app.post('/v1/pets')
    def create_pet():
        pet = {'id': 1, **json.loads(bottle.request.body.read())}
        bottle.response.status = 201
        bottle.response.content_type = 'application/json'
        return json.dumps(pet)

    return app


def run_server(kind: str, server: str, port: int, db: str) -> None:
    """Serve the bare app or the stub app on one of the candidate servers (a subprocess).

    ``server`` is waitress, waitress-4 (its own default thread count), cheroot or wsgiref.
    """
    sys.path.insert(0, str(ROOT))
    import petstore_stub

    app = bare_app() if kind == 'bare' else petstore_stub.create_app(
        petstore_stub.PetStore(db), [KEY])
    threads = petstore_stub.SERVER_THREADS
    if server.startswith('waitress'):
        threads = int(server.partition('-')[2] or threads)
        petstore_stub.StubServer(app, '127.0.0.1', port, threads=threads).start()._thread.join()
    elif server == 'cheroot':
        from cheroot import wsgi
        httpd = wsgi.Server(('127.0.0.1', port), app, numthreads=threads)
        httpd.start()
    else:
        from socketserver import ThreadingMixIn
        from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

        class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
            daemon_threads = True

        class QuietHandler(WSGIRequestHandler):
            def log_message(self, *args):
                pass

        make_server('127.0.0.1', port, app, server_class=ThreadingWSGIServer,
                    handler_class=QuietHandler).serve_forever()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def write_db(path: Path, count: int) -> None:
    statuses = ('available', 'pending', 'sold')
    pets = {str(n): {'name': f'pet{n}', 'categoryId': n % 7, 'status': statuses[n % 3]}
            for n in range(1, count + 1)}
    path.write_text(json.dumps({'pets': pets}), encoding='utf-8')


class Process:
    """A server in a subprocess, ready once it answers."""

    def __init__(self, command: list[str], port: int) -> None:
        self.port = port
        started = time.perf_counter()
        self.popen = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
        self.cold_start = wait_for_200(port, started, self.popen)

    def rss_mb(self) -> float:
        for line in Path(f'/proc/{self.popen.pid}/status').read_text().splitlines():
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
        return float('nan')

    def stop(self) -> None:
        self.popen.terminate()
        self.popen.wait(timeout=10)


def start(kind: str, db: Path, server: str = 'waitress') -> Process:
    port = free_port()
    if kind == 'stub' and server == 'waitress':
        # As the petstore-stub command runs it: imported, not compiled afresh as a script
        # (which costs about 3.5 MB of memory more).
        command = [sys.executable, '-m', 'petstore_stub', '--port', str(port), '--db', str(db),
                   '--api-key', KEY, '--quiet']
    else:
        command = [sys.executable, __file__, '_serve', kind, server, str(port), str(db)]
    return Process(command, port)


def wait_for_200(port: int, started: float, process: subprocess.Popen) -> float:
    request = f'GET /v1/pets?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}\r\n'.encode()
    while time.perf_counter() - started < 30:
        if process.poll() is not None:
            raise RuntimeError(f'the server exited with status {process.returncode}')
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=5) as conn:
                conn.sendall(request)
                if conn.recv(64)[8:13] == b' 200 ':
                    return time.perf_counter() - started
        except OSError:
            time.sleep(0.002)
    raise RuntimeError(f'no server answered on port {port}')


# -- Load ---------------------------------------------------------------------

def request_bytes(operation: str, pet_count: int) -> callable:
    if operation == 'list':
        fixed = f'GET /v1/pets?limit=20 HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}\r\n'.encode()
        return lambda: fixed
    if operation == 'get':
        return lambda: (f'GET /v1/pets/{random.randint(1, pet_count)} HTTP/1.1\r\n'
                        f'Host: 127.0.0.1\r\n{AUTH}\r\n').encode()
    fixed = (f'POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}'
             'Content-Type: application/json\r\n'
             f'Content-Length: {len(NEW_PET)}\r\n\r\n').encode() + NEW_PET
    return lambda: fixed


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


def load(port: int, operation: str, clients: int, seconds: float, pet_count: int) -> dict:
    """Keep-alive clients in threads, each sending requests back to back."""
    make_request = request_bytes(operation, pet_count)
    expected = 201 if operation == 'create' else 200
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures, reconnects = [0], [0]
    barrier = threading.Barrier(clients + 1)
    deadline = [0.0]

    def connect() -> socket.socket:
        conn = socket.create_connection(('127.0.0.1', port))
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def client(mine: list[float]) -> None:
        conn, buffer = connect(), bytearray()
        barrier.wait()
        while time.perf_counter() < deadline[0]:
            sent = time.perf_counter()
            try:
                conn.sendall(make_request())
                status = read_response(conn, buffer)
            except OSError:
                # A server without keep-alive closes the connection: pay for a new one.
                conn.close()
                conn, buffer = connect(), bytearray()
                reconnects[0] += 1
                continue
            if status != expected:
                failures[0] += 1
            mine.append(time.perf_counter() - sent)
        conn.close()

    threads = [threading.Thread(target=client, args=(mine,)) for mine in latencies]
    for thread in threads:
        thread.start()
    deadline[0] = time.perf_counter() + seconds
    barrier.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    merged = sorted(value for mine in latencies for value in mine)
    return {'rps': len(merged) / elapsed, 'p50': percentile(merged, 50),
            'p99': percentile(merged, 99), 'failures': failures[0], 'reconnects': reconnects[0]}


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float('nan')
    return values[min(len(values) - 1, int(len(values) * pct / 100))] * 1000


def median_of(rounds: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


# -- Report -------------------------------------------------------------------

def interleaved(processes: dict, operation: str, clients: int, settings: argparse.Namespace,
                pet_counts: dict | None = None) -> dict[str, list[dict]]:
    """Rounds of the same load on each process in turn, the order rotating each round.

    ``pet_counts`` gives each process's number of pets (1,000 if not given).
    """
    figures: dict[str, list[dict]] = {name: [] for name in processes}
    names = list(processes)
    for number in range(settings.rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            pets = (pet_counts or {}).get(name, 1_000)
            figures[name].append(load(processes[name].port, operation, clients,
                                      settings.seconds, pets))
    return figures


def paired_ratio(mine: list[dict], theirs: list[dict]) -> float:
    """The median of the round-by-round ratios: each pair ran a moment apart."""
    return statistics.median(a['rps'] / b['rps'] for a, b in zip(mine, theirs))


def compare(stub: Process, bare: Process, settings: argparse.Namespace) -> None:
    print(f'\n{"operation":<8} {"clients":>7} {"stub req/s":>11} {"bare req/s":>11} {"ratio":>6} '
          f'{"stub p50/p99 ms":>16} {"bare p50/p99 ms":>16}')
    for operation in ('list', 'get', 'create'):
        for clients in (1, 16):
            figures = interleaved({'stub': stub, 'bare': bare}, operation, clients, settings)
            s, b = median_of(figures['stub']), median_of(figures['bare'])
            ratio = paired_ratio(figures['stub'], figures['bare'])
            failed = ' FAILURES' if s['failures'] or b['failures'] else ''
            print(f'{operation:<8} {clients:>7} {s["rps"]:>11.0f} {b["rps"]:>11.0f} '
                  f'{ratio:>5.2f}x {s["p50"]:>7.2f}/{s["p99"]:<8.2f} '
                  f'{b["p50"]:>7.2f}/{b["p99"]:<8.2f}{failed}')


def scale(settings: argparse.Namespace, folder: Path) -> None:
    print('\nthe same stub with more pets (16 clients, req/s)')
    sizes = (1_000, 100_000) if not settings.quick else (1_000, 10_000)
    processes = {}
    for count in sizes:
        write_db(folder / f'scale{count}.json', count)
        processes[count] = start('stub', folder / f'scale{count}.json')
    try:
        for operation in ('list', 'get', 'create'):
            figures = interleaved(processes, operation, 16, settings, {n: n for n in sizes})
            small, large = (median_of(figures[count])['rps'] for count in sizes)
            ratio = paired_ratio(figures[sizes[1]], figures[sizes[0]])
            print(f'{operation:<8} {sizes[0]:>7} pets: {small:>7.0f}  {sizes[1]:>7} pets: '
                  f'{large:>7.0f}  ratio {ratio:.2f}x')
    finally:
        for process in processes.values():
            process.stop()
    checkpoint_cost(folder / 'fold.json', sizes[1])


def checkpoint_cost(db: Path, count: int) -> None:
    """What folding the log into the file costs: the stub pays it once per ``count`` creates."""
    sys.path.insert(0, str(ROOT))
    import petstore_stub

    write_db(db, count)
    store = petstore_stub.PetStore(db)
    store.add({'name': 'Bench', 'categoryId': 7})
    started = time.perf_counter()
    store.close()  # folds the log into the file: the whole file written anew
    print(f'folding the log into the file, {count:,} pets: '
          f'{(time.perf_counter() - started) * 1000:.0f} ms (once per {count:,} creates)')


def startup_and_memory(settings: argparse.Namespace, folder: Path) -> None:
    db = folder / 'start.json'
    write_db(db, 1_000)
    cold, idle = [], []
    for _ in range(max(3, settings.rounds)):
        process = start('stub', db)
        cold.append(process.cold_start)
        time.sleep(0.2)
        idle.append(process.rss_mb())
        process.stop()
    bare = start('bare', db)
    print(f'\ncold start to first 200, 1,000 pets: {statistics.median(cold) * 1000:.0f} ms '
          f'(bare app {bare.cold_start * 1000:.0f} ms)')
    print(f'idle RSS, 1,000 pets: {statistics.median(idle):.1f} MB '
          f'(bare app {bare.rss_mb():.1f} MB)')
    bare.stop()


def fixture_cost(settings: argparse.Namespace) -> None:
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


def servers(settings: argparse.Namespace, folder: Path) -> None:
    """The stub app and the bare app on each candidate WSGI server, interleaved."""
    candidates = ('waitress', 'waitress-4', 'cheroot', 'wsgiref')
    print(f'\n{"app":<5} {"server":<11} {"operation":<8} {"clients":>7} {"req/s":>8} {"p50 ms":>8} '
          f'{"p99 ms":>8} {"reconnects":>10}')
    for kind in ('stub', 'bare'):
        processes = {}
        for name in candidates:
            write_db(folder / f'{kind}-{name}.json', 1_000)
            try:
                processes[name] = start(kind, folder / f'{kind}-{name}.json', server=name)
            except RuntimeError as error:
                print(f'{kind:<5} {name:<11} not measured: {error}')
        try:
            for operation in ('list', 'create'):
                for clients in (1, 16):
                    figures = interleaved(processes, operation, clients, settings)
                    for name, rounds in figures.items():
                        f = median_of(rounds)
                        print(f'{kind:<5} {name:<11} {operation:<8} {clients:>7} {f["rps"]:>8.0f} '
                              f'{f["p50"]:>8.2f} {f["p99"]:>8.2f} {f["reconnects"]:>10.0f}'
                              + (' FAILURES' if f['failures'] else ''))
        finally:
            for process in processes.values():
                process.stop()


def crowd(folder: Path) -> None:
    """How long a new client waits while idle and slowloris connections hold the server."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(8192, hard)), hard))
    request = f'GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n{AUTH}\r\n'.encode()
    print('idle  slow  new client: p50 ms  max ms  answered')
    for idle, slow in ((0, 0), (500, 100), (900, 95), (1000, 100)):
        stub = start('stub', folder / 'crowd.json')
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['_serve']:
        run_server(argv[1], argv[2], int(argv[3]), argv[4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='a smoke test, in a few seconds')
    parser.add_argument('--servers', action='store_true', help='compare WSGI servers instead')
    parser.add_argument('--crowd', action='store_true',
                        help="a new client's wait beside idle and slow connections")
    settings = parser.parse_args(argv)
    settings.seconds = 0.2 if settings.quick else 0.5
    settings.rounds = 1 if settings.quick else 7
    print(f'machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}'
          f'; {settings.rounds} interleaved round(s) of {settings.seconds} s per figure')
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if settings.servers:
            servers(settings, folder)
            return 0
        if settings.crowd:
            write_db(folder / 'crowd.json', 1_000)
            crowd(folder)
            return 0
        write_db(folder / 'stub.json', 1_000)
        stub, bare = start('stub', folder / 'stub.json'), start('bare', folder / 'bare.json')
        try:
            compare(stub, bare, settings)
            print(f'\nRSS after load: stub {stub.rss_mb():.1f} MB, bare app {bare.rss_mb():.1f} MB')
        finally:
            stub.stop()
            bare.stop()
        scale(settings, folder)
        startup_and_memory(settings, folder)
        fixture_cost(settings)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
