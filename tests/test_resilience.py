"""The promises under pressure: memory, in the stub as its own process, as a user would run it."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from conftest import StubProcess, port_of, raw_post, rss_mb


# -- memory -------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(not Path('/proc/self/status').exists(), reason='reads RSS from /proc')
def test_deeply_nested_bodies_are_400s_that_hold_no_memory():
    server = StubProcess('--db', ':memory:', '--quiet', '--admin')
    port = port_of(server.url)
    deep = b'[' * 500_000
    assert {raw_post(port, deep) for _ in range(20)} == {400}
    warmed = rss_mb(server.process.pid)  # the allocator has its arenas now
    assert {raw_post(port, deep) for _ in range(200)} == {400}
    grown = rss_mb(server.process.pid) - warmed
    server.stop(signal.SIGTERM)
    # Before, each such request held 2.9 MB for good: 200 of them, 580 MB.
    assert grown < 20, f'RSS grew {grown:.1f} MB over 200 deeply nested bodies'
    assert 'Traceback' not in server.process_stderr
