"""The admin endpoints from another language: tests/admin.test.mjs, run by Node's own runner; and
a typed client generated from the stub's descriptions, checked by tsc and run."""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from urllib.request import urlopen

import pytest
import trustme

import petstore_stub as stub
from conftest import StubProcess

SUITE = Path(__file__).resolve().parent / 'admin.test.mjs'


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('node') is None, reason='the suite runs on Node (node --test)')
@pytest.mark.parametrize('scheme', ['http', 'https'])
def test_the_node_suite_drives_every_admin_endpoint_and_meets_each_fault(scheme, tmp_path):
    environment = {**os.environ, 'PETSTORE_PYTHON': sys.executable,
                   'PETSTORE_VERSION': stub.__version__}
    if scheme == 'https':  # a certificate of one's own, as mkcert makes: Node reads its CA at start
        ca = trustme.CA()
        ca.cert_pem.write_to_path(tmp_path / 'ca.pem')
        ca.issue_cert('127.0.0.1', 'localhost').private_key_and_cert_chain_pem.write_to_path(
            tmp_path / 'stub.pem')
        environment.update(PETSTORE_TLS_ARGS=f'--tls-cert {tmp_path / "stub.pem"}',
                           NODE_EXTRA_CA_CERTS=str(tmp_path / 'ca.pem'))
    result = subprocess.run(['node', '--test', str(SUITE)], capture_output=True, text=True,
                            env=environment, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '# fail 0' in result.stdout and '# pass 0' not in result.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('node') is None, reason='fetch runs on Node')
def test_node_fetch_trusts_the_ca_the_stub_made_through_node_extra_ca_certs(tmp_path):
    ready = tmp_path / 'stub.json'
    stub_process = StubProcess('--tls', '--db', ':memory:', '--fixtures', '--ready-file',
                               str(ready))
    try:
        urls = json.loads(ready.read_text())
        fetch = ("const r = await fetch(process.argv[1] + '/pets/1', {headers: "
                 "{Authorization: 'Bearer petstore-demo-key'}}); console.log(r.status, "
                 "(await r.json()).name)")
        trusted, untrusted = (
            subprocess.run(['node', '--input-type=module', '-e', fetch, urls['url']],
                           capture_output=True, text=True, timeout=30, env=environment)
            for environment in ({**os.environ, 'NODE_EXTRA_CA_CERTS': urls['ca_file']},
                                os.environ))
        assert (trusted.returncode, trusted.stdout) == (0, '200 Rex\n'), trusted.stderr
        assert untrusted.returncode == 1 and 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' in untrusted.stderr
    finally:
        assert stub_process.stop(signal.SIGTERM) == 0


#: A client that keeps ids as JavaScript numbers: it creates a pet, then asks for it by its id.
ROUND_TRIP = """
const [url, key] = process.argv.slice(1);
const headers = {Authorization: `Bearer ${key}`, 'Content-Type': 'application/json'};
const created = JSON.parse(await (await fetch(url + '/pets', {method: 'POST', headers,
  body: JSON.stringify({name: 'Rex', categoryId: 1})})).text());
const answer = await fetch(`${url}/pets/${created.id}`, {headers});
console.log(answer.status, JSON.parse(await answer.text()).message);
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('node') is None, reason='fetch runs on Node')
def test_a_node_client_that_parses_ids_as_numbers_past_2_53_asks_for_another_pet():
    with stub.serve(first_id=2 ** 53 + 1) as server:
        result = subprocess.run(['node', '--input-type=module', '-e', ROUND_TRIP, server.url,
                                 server.api_key], capture_output=True, text=True, timeout=30)
    assert (result.returncode, result.stderr) == (0, '')
    assert result.stdout == '404 no pet has id 9007199254740992\n'  # it was given ...993


ROOT = SUITE.parent.parent
NODE_MODULES = ROOT / '.ci' / 'node' / 'node_modules'
TYPED_CLIENT = SUITE.parent / 'typed_client.mts'


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('node') is None or not (NODE_MODULES / '.bin' / 'tsc').exists(),
                    reason='.ci/run installs openapi-typescript, typescript and openapi-fetch')
def test_a_client_generated_from_both_descriptions_type_checks_and_makes_every_admin_call(
        tmp_path):
    (tmp_path / 'node_modules').symlink_to(NODE_MODULES)
    ready = tmp_path / 'stub.json'
    stub_process = StubProcess('--admin', '--db', ':memory:', '--ready-file', str(ready))
    try:
        urls = json.loads(ready.read_text())
        for name, url in (('api', urls['url']), ('admin', urls['admin_url'])):
            (tmp_path / f'{name}.json').write_bytes(urlopen(f'{url}/openapi.json').read())
            run(NODE_MODULES / '.bin' / 'openapi-typescript', f'{name}.json', '-o',
                f'{name}.d.ts', cwd=tmp_path)
        shutil.copy(TYPED_CLIENT, tmp_path)
        run(NODE_MODULES / '.bin' / 'tsc', '--strict', '--module', 'nodenext', '--moduleResolution',
            'nodenext', '--target', 'es2022', '--skipLibCheck', '--outDir', 'out',
            TYPED_CLIENT.name, cwd=tmp_path)
        result = run('node', 'out/typed_client.mjs', cwd=tmp_path,
                     env={**os.environ, 'READY': str(ready)})
        assert result.stdout == 'every admin call, as typed\n'
    finally:
        assert stub_process.stop(signal.SIGTERM) == 0


def run(*command, **options) -> subprocess.CompletedProcess:
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                            timeout=120, **options)
    assert result.returncode == 0, result.stdout + result.stderr
    return result
