"""The admin endpoints from another language: tests/admin.test.mjs, run by Node's own runner."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parent / 'admin.test.mjs'


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('node') is None, reason='the suite runs on Node (node --test)')
def test_the_node_suite_drives_every_admin_endpoint_and_meets_each_fault():
    result = subprocess.run(['node', '--test', str(SUITE)], capture_output=True, text=True,
                            env={**os.environ, 'PETSTORE_PYTHON': sys.executable}, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '# fail 0' in result.stdout and '# pass 0' not in result.stdout
