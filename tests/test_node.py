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

from conftest import StubProcess

SUITE = Path(__file__).resolve().parent / 'admin.test.mjs'


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('node') is None, reason='the suite runs on Node (node --test)')
def test_the_node_suite_drives_every_admin_endpoint_and_meets_each_fault():
    result = subprocess.run(['node', '--test', str(SUITE)], capture_output=True, text=True,
                            env={**os.environ, 'PETSTORE_PYTHON': sys.executable}, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '# fail 0' in result.stdout and '# pass 0' not in result.stdout


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
