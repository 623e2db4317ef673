"""The speed guard: the stub's CPU per request beside an independent reference, in one run.

A ratio of two figures measured side by side, not a wall-clock bound: the server's CPU
time per request (from /proc) is steady on a shared machine where req/s is not. The
reference is tests/bench.py's plain bottle app on waitress's defaults, in a process of
its own, importing nothing from the stub.
"""

import sys

import bench
import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith('linux'), reason='reads CPU time from /proc'),
]


def test_a_get_costs_the_stub_at_most_twice_the_cpu_the_reference_spends(tmp_path):
    bench.write_db(tmp_path / 'pets.json', 1_000)
    stub, reference = bench.start_stub(tmp_path / 'pets.json'), bench.start_reference(tmp_path)
    load = bench.choose_load()
    try:  # one round: the stub spends about half the reference's CPU, far inside the bound
        figures = bench.side_by_side(stub, reference, load, 'get', 16, 1, 1, tmp_path)
    finally:
        stub.stop()
        reference.stop()
    assert not figures['stub']['failures']
    assert figures['cpu_ratio'] <= 2, (
        f'the stub spends {figures["cpu_ratio"]:.2f}x the reference\'s CPU per get: '
        f'{figures["stub"]["cpu_ms"]:.3f} ms against {figures["reference"]["cpu_ms"]:.3f} ms')
