// The admin endpoints as a Node suite meets them: the stub started with --ready-file, every
// endpoint over fetch, and what each connection fault does to fetch. Run by
// tests/test_node.py (node --test tests/admin.test.mjs); PETSTORE_PYTHON names the Python,
// PETSTORE_VERSION the stub's version, and PETSTORE_TLS_ARGS (--tls-cert and --tls-key, split on
// spaces) a pass over HTTPS, its CA given to Node in NODE_EXTRA_CA_CERTS.
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const MODULE = fileURLToPath(new URL('../petstore_stub.py', import.meta.url));
const AUTH = { Authorization: 'Bearer petstore-demo-key' };
const JSON_AUTH = { ...AUTH, 'Content-Type': 'application/json' };
const REX = { name: 'Rex', categoryId: 1 };
const TLS = process.env.PETSTORE_TLS_ARGS?.split(' ') ?? [];
const STUB = [MODULE, '--admin', '--port', '0', '--db', ':memory:', '--quiet', ...TLS];

let stub, folder, readyFile, ready, exited;

before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'petstore-stub-'));
  readyFile = join(folder, 'ready.json');
  stub = spawn(process.env.PETSTORE_PYTHON ?? 'python3', [...STUB, '--ready-file', readyFile],
               { stdio: ['ignore', 'ignore', 'inherit'] });
  exited = new Promise((resolve) => stub.on('exit', resolve));
  while (!ready) {
    assert.equal(stub.exitCode, null, 'the stub exited before it was ready');
    ready = await readFile(readyFile, 'utf8').then(JSON.parse, () => sleep(20));
  }
});

test('the coverage counts what the calls met of the description, and is cleared', async () => {
  assert.equal((await admin('DELETE', 'coverage')).status, 204);
  await createPet();
  await fetch(`${ready.url}/pets/1`, { headers: AUTH });
  await fetch(`${ready.url}/pets/7`, { headers: AUTH });
  await fetch(`${ready.url}/pets`);  // no key: a 401, counted for listPets
  await admin('POST', 'faults', { fault: 'truncate', route: 'listPets' });
  await fetch(`${ready.url}/pets`, { headers: AUTH }).then((response) => response.text()
    .catch(() => null));
  const hint = 'Removed on Thu, 05 Dec 2030 00:00:00 GMT; '
             + 'use GET /pets with the status filter instead.';
  // Each response the served document describes, met 0 times but for those met above: an
  // operation added to the document (as an exercise adds one) is counted too.
  const described = (await (await fetch(`${ready.url}/openapi.json`)).json()).paths;
  const responses = {};
  for (const operation of Object.values(described).flatMap(Object.values)) {
    responses[operation.operationId] = Object.fromEntries(Object.keys(operation.responses)
      .filter((status) => status !== 'default').map((status) => [status, 0]));
  }
  Object.assign(responses.listPets, { 200: 1, 401: 1 });
  Object.assign(responses.createPet, { 201: 1 });
  Object.assign(responses.getPet, { 200: 1, 404: 1 });
  assert.deepEqual((await admin('GET', 'coverage')).body, {
    responses,
    met: 5,
    documented: Object.values(responses).flatMap(Object.keys).length,
    faults: { truncate: 1 },
    deprecated: { getPet: { calls: 2, hint } },
    unmatched: [],
  });
  assert.equal((await admin('DELETE', 'coverage')).status, 204);
  assert.equal((await admin('GET', 'coverage')).body.met, 0);
});

after(async () => {
  stub.kill('SIGTERM');
  assert.equal(await exited, 0);
  await assert.rejects(access(readyFile), { code: 'ENOENT' });  // a clean stop removes it
  await rm(folder, { recursive: true });
});

beforeEach(() => admin('POST', 'reset'));

async function admin(method, path, body, headers = JSON_AUTH) {
  const response = await fetch(`${ready.admin_url}/${path}`, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: response.status === 204 ? null : await response.json() };
}

const createPet = () => fetch(`${ready.url}/pets`, {
  method: 'POST', headers: JSON_AUTH, body: JSON.stringify(REX),
});

test('the ready file names the stub and its process', () => {
  assert.equal(ready.pid, stub.pid);
  assert.match(ready.url, TLS.length ? /^https:\/\/127\.0\.0\.1:\d+\/v1$/
                                     : /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  assert.equal(ready.admin_url, ready.url.replace(/\/v1$/, '/__admin'));
});

test('health needs no key', async () => {
  assert.deepEqual(await admin('GET', 'health', undefined, {}),
                   { status: 200, body: { status: 'ok', version: process.env.PETSTORE_VERSION,
                                          base_url: ready.url } });
});

test('the admin description needs no key and names the stub as its server', async () => {
  const { status, body } = await admin('GET', 'openapi.json', undefined, {});
  assert.equal(status, 200);
  assert.deepEqual(body.servers, [{ url: ready.admin_url, description: 'this stub' }]);
  assert.ok(body.paths['/requests/assert'].post);
});

test('an admin call without the key is a 401', async () => {
  const { status, body } = await admin('GET', 'requests', undefined, {});
  assert.deepEqual([status, body.code], [401, 'unauthorized']);
});

test('count and assert hold the journal to a filter', async () => {
  await createPet();
  const rex = { operation: 'createPet', json: REX };
  assert.deepEqual(await admin('POST', 'requests/count', rex), { status: 200, body: { count: 1 } });
  assert.deepEqual(await admin('POST', 'requests/count', { method: 'GET', path: '/pets' }),
                   { status: 200, body: { count: 0 } });
  assert.deepEqual(await admin('POST', 'requests/assert', { ...rex, times: 1 }),
                   { status: 200, body: { matched: 1 } });
  assert.deepEqual(await admin('POST', 'requests/assert', { operation: 'getPet', times: 0 }),
                   { status: 200, body: { matched: 0 } });
});

test('a failed assert is a 409 that shows how the closest call differs', async () => {
  await createPet();
  const { status, body } = await admin('POST', 'requests/assert',
                                       { operation: 'createPet', json: { ...REX, categoryId: 2 } });
  assert.deepEqual([status, body.code, body.status], [409, 'assertion_failed', 409]);
  assert.match(body.message, /The closest, #1, differs in:\n {2}categoryId: expected 2, sent 1/);
  const never = await admin('POST', 'requests/assert', { operation: 'createPet', times: 0 });
  assert.match(never.body.message, /^createPet was called once; expected no times\./);
});

test('deleting the requests empties the journal, and only the journal', async () => {
  await createPet();
  await admin('POST', 'faults', { fault: 503, times: 2 });
  assert.equal((await admin('DELETE', 'requests')).status, 204);
  assert.deepEqual((await admin('GET', 'requests')).body, []);
  assert.equal((await admin('GET', 'faults')).body.faults.length, 1);
  const pets = await fetch(`${ready.url}/pets`, { headers: AUTH });
  assert.equal(pets.status, 503);  // the fault still fires
});

test('the faults are listed with what is left of them, and cancelled', async () => {
  const { id } = (await admin('POST', 'faults',
                              { fault: 503, times: 2, after: 1, route: 'listPets' })).body;
  assert.deepEqual((await admin('GET', 'faults')).body, {
    faults: [{ id, fault: 503, times: 2, route: 'listPets', after: 1, retry_after: null,
               seconds: null }],
  });
  assert.equal((await admin('DELETE', 'faults')).status, 204);
  assert.deepEqual((await admin('GET', 'faults')).body, { faults: [] });
});

test('one fault is cancelled by its id, and the others stay', async () => {
  const first = (await admin('POST', 'faults', { fault: 503 })).body.id;
  const second = (await admin('POST', 'faults', { fault: 'drop', route: 'getPet' })).body.id;
  assert.equal((await admin('DELETE', `faults/${first}`)).status, 204);
  assert.equal((await admin('DELETE', `faults/${first}`)).body.code, 'not_found');
  assert.deepEqual((await admin('GET', 'faults')).body.faults.map((fault) => fault.id), [second]);
  assert.equal((await fetch(`${ready.url}/pets`, { headers: AUTH })).status, 200);
});

test('find returns the calls a filter matches, and since one less gives a call first', async () => {
  await createPet();
  await fetch(`${ready.url}/pets?limit=2`, { headers: AUTH });
  const found = await admin('POST', 'requests/find', { operation: 'createPet', json: REX });
  assert.equal(found.status, 200);
  assert.deepEqual(found.body.map((entry) => [entry.operation, entry.body]), [['createPet', REX]]);
  const since = await admin('GET', `requests?since=${found.body[0].sequence - 1}`);
  assert.deepEqual(since.body[0], found.body[0]);
});

test('a failed assert carries each close call and its differences as data', async () => {
  await createPet();
  const { status, body } = await admin('POST', 'requests/assert',
                                       { operation: 'createPet', json: { ...REX, categoryId: 2 } });
  assert.equal(status, 409);
  assert.match(body.message, /categoryId: expected 2, sent 1/);
  assert.deepEqual(body.assertion.calls[0].differences,
                   [{ field: 'categoryId', expected: 2, sent: 1 }]);
});

test('the settings show the delays and the faults queued', async () => {
  await admin('POST', 'faults', { fault: 503 });
  await admin('POST', 'delay', { seconds: 0.01, route: 'getPet' });
  const { body } = await admin('GET', 'settings');
  assert.deepEqual([body.delays, body.faults_queued, body.journal_size],
                   [[{ seconds: 0.01, route: 'getPet' }], 1, 1000]);
  await admin('DELETE', 'faults');
});

test('a delay is set, and turned off with 0', async () => {
  const set = await admin('POST', 'delay', { seconds: 0.05 });
  assert.deepEqual(set, { status: 200, body: { seconds: 0.05, route: null } });
  assert.equal((await fetch(`${ready.url}/pets`, { headers: AUTH })).status, 200);
  assert.equal((await admin('POST', 'delay', { seconds: 0 })).body.seconds, 0);
  assert.deepEqual((await admin('GET', 'settings')).body.delays, []);
});

test('a delay for one route holds that route only', async () => {
  const delay = { seconds: 0.3, route: 'createPet' };
  assert.deepEqual((await admin('POST', 'delay', delay)).body, delay);
  let started = performance.now();
  await fetch(`${ready.url}/pets`, { headers: AUTH });
  const listed = performance.now() - started;
  started = performance.now();
  assert.equal((await createPet()).status, 201);
  const created = performance.now() - started;
  assert.ok(created > listed + 50, `createPet took ${created} ms, listPets ${listed} ms`);
});

test('fixtures load the demo animals, once', async () => {
  const { status, body } = await admin('POST', 'fixtures');
  assert.deepEqual([status, body.length, body[0].id], [201, 13, 1]);
  assert.equal((await admin('POST', 'fixtures')).body.code, 'store_not_empty');
});

for (const [name, method, path, body, code] of [
  ['fixtures with a body', 'POST', 'fixtures', { pets: [] }, 'invalid_body'],
  ['reset with a body', 'POST', 'reset', {}, 'invalid_body'],
  ['the journal filtered by a query', 'GET', 'requests?operation=createPet', undefined,
   'invalid_parameter'],
  ['a filter with an unknown field', 'POST', 'requests/count', { operationId: 'createPet' },
   'invalid_body'],
  ['a filter with times', 'POST', 'requests/count', { operation: 'createPet', times: 1 },
   'invalid_body'],
  ['a query of the wrong type', 'POST', 'requests/count', { operation: 'listPets', query: 'limit=1' },
   'invalid_body'],
  ['times as text', 'POST', 'requests/assert', { operation: 'listPets', times: '1' }, 'invalid_body'],
  ['a delay as text', 'POST', 'delay', { seconds: '1' }, 'invalid_body'],
  ['a fault that is none', 'POST', 'faults', { fault: 'sluggish' }, 'invalid_body'],
  ['cancelling faults with a query', 'DELETE', 'faults?route=getPet', undefined, 'invalid_parameter'],
]) {
  test(`strict: ${name} is a 400`, async () => {
    const answer = await admin(method, path, body);
    assert.deepEqual([answer.status, answer.body.code, answer.body.status], [400, code, 400]);
  });
}

// -- what each fault does to fetch -----------------------------------------------------------

const listPets = (options = {}) => fetch(`${ready.url}/pets`, { headers: AUTH, ...options });

async function failNext(fault) {
  assert.equal((await admin('POST', 'faults', fault)).status, 201);
}

test('drop: fetch rejects, "other side closed"', async () => {
  await failNext({ fault: 'drop' });
  await assert.rejects(listPets(), (error) => error.name === 'TypeError'
    && error.message === 'fetch failed' && error.cause.code === 'UND_ERR_SOCKET');
});

test('reset: fetch rejects with ECONNRESET', async () => {
  await failNext({ fault: 'reset' });
  await assert.rejects(listPets(), (error) => error.message === 'fetch failed'
    && error.cause.code === 'ECONNRESET');
});

test('truncate: the status arrives, then reading the body rejects, "terminated"', async () => {
  await failNext({ fault: 'truncate' });
  const response = await listPets();
  assert.equal(response.status, 200);
  await assert.rejects(response.text(), (error) => error.name === 'TypeError'
    && error.message === 'terminated' && error.cause.code === 'UND_ERR_SOCKET');
});

test('malformed: the status arrives, then response.json() rejects with a SyntaxError', async () => {
  await failNext({ fault: 'malformed' });
  const response = await listPets();
  assert.equal(response.status, 200);
  await assert.rejects(response.json(), SyntaxError);
});

test('hang: only a timeout of its own ends the wait, with a TimeoutError', async () => {
  await failNext({ fault: 'hang', seconds: 5 });
  await assert.rejects(listPets({ signal: AbortSignal.timeout(100) }), { name: 'TimeoutError' });
});

test('slow: the body arrives whole, or a timeout shorter than the drip ends it', async () => {
  await admin('POST', 'fixtures');
  const whole = await (await listPets()).text();
  await failNext({ fault: 'slow', seconds: 0.2 });
  assert.equal(await (await listPets()).text(), whole);
  await failNext({ fault: 'slow', seconds: 5 });
  const response = await listPets({ signal: AbortSignal.timeout(300) });
  assert.equal(response.status, 200);  // the head comes at once; the body is dripped
  await assert.rejects(response.text(), { name: 'TimeoutError' });
});
