// Starting the stub from a Node test suite, with nothing but Node: --port 0 and a ready file,
// then the admin endpoints over fetch. tests/test_readme.py runs it as written.
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

await rm('stub.json', { force: true });   // one left by a stub that was killed would point at it
const stub = spawn('petstore-stub', ['--admin', '--db', ':memory:', '--port', '0', '--quiet',
                                     '--ready-file', 'stub.json'],
                   { stdio: ['ignore', 'ignore', 'inherit'] });   // its errors on stderr
let ready, failed;
stub.on('error', (error) => { failed = error; });   // ENOENT: petstore-stub is not on PATH
try {   // the stub stops however this ends
  while (!ready) {
    if (failed) {
      throw new Error(`cannot run petstore-stub (${failed.code}); put the venv's bin on PATH`);
    }
    if (stub.exitCode !== null) throw new Error('the stub did not start');
    ready = await readFile('stub.json', 'utf8').then(JSON.parse, () => sleep(50));
  }
  const headers = { Authorization: 'Bearer petstore-demo-key',
                    'Content-Type': 'application/json' };
  const post = (url, body) => fetch(url, { method: 'POST', headers,
                                           body: JSON.stringify(body) });

  // ... the client under test runs against ready.url; here, one call in its place:
  await post(`${ready.url}/pets`, { name: 'Rex', categoryId: 1 });
  const check = await post(`${ready.admin_url}/requests/assert`, {
    operation: 'createPet', json: { name: 'Rex', categoryId: 1 }, times: 1 });
  console.log(check.status, await check.json());   // 200 { matched: 1 }
} catch (error) {
  console.error(`example_node: ${error.message}`);
  process.exitCode = 1;
} finally {
  stub.kill();   // SIGTERM: a clean stop, which removes stub.json
}
