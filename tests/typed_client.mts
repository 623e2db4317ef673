// Every admin call the README shows, from a client generated from the stub's own descriptions
// (openapi-typescript) and made with openapi-fetch, checked by tsc --strict, then run against a
// stub started on --port 0. tests/test_node.py writes api.d.ts and admin.d.ts beside a copy of
// it, and names the stub's ready file in READY.
import createClient from 'openapi-fetch';
import { readFileSync } from 'node:fs';
import type { paths as Api } from './api.js';
import type { paths as Admin } from './admin.js';

// The base URLs come from the ready file: the port is another each run.
const ready = JSON.parse(readFileSync(process.env.READY ?? 'stub.json', 'utf8')) as {
  url: string; admin_url: string };
const headers = { Authorization: 'Bearer petstore-demo-key' };
const api = createClient<Api>({ baseUrl: ready.url, headers });
const admin = createClient<Admin>({ baseUrl: ready.admin_url, headers });

function check(holds: boolean, what: string): void {
  if (!holds) throw new Error(`not so: ${what}`);
}

await admin.POST('/reset');
const fault = await admin.POST('/faults', { body: { fault: 503, route: 'createPet' } });
check(fault.response.status === 201 && fault.data?.times === 1 && fault.data.seconds === null,
      'a fault is queued with every field');
check((await api.POST('/pets', { body: { name: 'Rex', categoryId: 1 } })).response.status === 503,
      'the fault fires');
const created = await api.POST('/pets', { body: { name: 'Rex', categoryId: 1 } });
check(created.data?.id === 1, 'the retry creates Rex');

const count = await admin.POST('/requests/count', { body: { operation: 'createPet' } });
check(count.data?.count === 2, 'two createPet calls are counted');
const held = await admin.POST('/requests/assert', {
  body: { operation: 'createPet', json: { name: 'Rex', categoryId: 1 }, times: 2 } });
check(held.data?.matched === 2, 'the assertion holds');
const failed = await admin.POST('/requests/assert', {
  body: { operation: 'createPet', json: { name: 'Kiwi', categoryId: 1 } } });
// A 409's body is AssertionFailed; the other errors' are Error, without assertion.
const assertion = failed.error && 'assertion' in failed.error ? failed.error.assertion : undefined;
check(failed.response.status === 409 && assertion?.calls[0]?.differences[0]?.field === 'name',
      'a failed assertion says, as data, that the name differs');

const found = await admin.POST('/requests/find', { body: { method: 'POST', path: '/pets' } });
const first = found.data?.[0];
check(first !== undefined && found.data?.length === 2, 'find returns both calls');
const since = await admin.GET('/requests', { params: { query: { since: first!.sequence - 1 } } });
check(since.data?.[0]?.status === 503, 'the first call, had by since, met the fault');

const drop = await admin.POST('/faults', { body: { fault: 'drop', route: 'getPet', after: 1 } });
const cancelled = await admin.DELETE('/faults/{fault_id}', {
  params: { path: { fault_id: drop.data!.id } } });
check(cancelled.response.status === 204, 'one fault is cancelled by its id');

const delay = await admin.POST('/delay', { body: { seconds: 0.01, route: 'getPet' } });
check(delay.data?.seconds === 0.01 && delay.data.route === 'getPet', 'a delay is set');
const settings = await admin.GET('/settings');
check(settings.data?.delays[0]?.route === 'getPet' && settings.data.faults_queued === 0,
      'the settings show the delay, and no fault queued');
await admin.POST('/delay', { body: { seconds: 0, route: 'getPet' } });

const partial = await admin.POST('/requests/count', {
  body: { operation: 'createPet', json_including: { name: 'Rex' } } });
check(partial.data?.count === 2, 'a partial match counts both calls that hold the name');
await fetch(`${ready.url}/pest`, { headers });  // a typo no operation answers
const unmatched = await admin.GET('/requests/unmatched');
check(unmatched.data?.length === 1 && unmatched.data[0]?.status === 404
      && unmatched.data[0].unmatched, 'the request no operation answered is listed');
console.log('every admin call, as typed');
