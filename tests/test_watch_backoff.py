"""The watcher's polls back off with the cost of a scan, so a huge vault does not keep a
CPU busy while the app sits idle."""

from __future__ import annotations

from hqltui.core.watch import WATCH_SHARE, poll_due


def test_a_cheap_scan_is_repeated_every_interval() -> None:
    assert poll_due(10.0, None, 0.0, 2.0)  # never scanned: at once
    assert not poll_due(11.9, 10.0, 0.004, 2.0)
    assert poll_due(12.0, 10.0, 0.004, 2.0)


def test_a_costly_scan_rests_until_the_watcher_takes_its_share_of_one_cpu() -> None:
    cost = 1.4  # a 17,570-page vault's scan
    rest = cost * (1 / WATCH_SHARE - 1)
    assert round(rest, 6) == 26.6
    assert not poll_due(10.0 + 2.0, 10.0, cost, 2.0)  # the plain interval is not enough
    assert not poll_due(10.0 + rest - 0.01, 10.0, cost, 2.0)
    assert poll_due(10.0 + rest + 0.01, 10.0, cost, 2.0)
    # over a scan and its rest, the share of time spent scanning is WATCH_SHARE
    assert abs(cost / (cost + rest) - WATCH_SHARE) < 1e-12
