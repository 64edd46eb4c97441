"""A build stopped while an encoder call is still running does not wait for it.

Ctrl-C during a build used to take up to a run of 32 long texts (about 2 s) to
exit: the side-by-side calls were waited for before the stop could go on, and
again when the interpreter exited. The stop now leaves them (their vectors are not
needed: the checkpoint holds whole parts only) and ``producer.cli.entry`` exits
without joining them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import numpy as np

from producer.embedders.local import _in_order


class HeldEncoder:
    """An encoder whose second call blocks until the test lets it go."""

    def __init__(self) -> None:
        self.second_started = threading.Event()
        self.release = threading.Event()
        self.calls = 0
        self.lock = threading.Lock()

    def forward(self, enc: dict[str, np.ndarray]) -> np.ndarray:
        with self.lock:
            self.calls += 1
            call = self.calls
        if call == 2:
            self.second_started.set()
            self.release.wait()
        return enc["input_ids"].astype(np.float32)

    @contextlib.contextmanager
    def side_by_side(self) -> Iterator[None]:
        yield


def padded(run: list[list[int]]) -> dict[str, np.ndarray]:
    return {"input_ids": np.array(run, dtype=np.int64)}


def test_a_stop_does_not_wait_for_the_call_in_flight() -> None:
    encoder = HeldEncoder()
    runs = [[[1, 2]], [[3, 4]], [[5, 6]]]
    results = _in_order(runs, padded, encoder, workers=2)
    try:
        run, _, hidden = next(results)
        assert run == [[1, 2]] and hidden.tolist() == [[1.0, 2.0]]
        assert encoder.second_started.wait(30)
        stopped = threading.Event()
        raised: list[BaseException] = []

        def stop() -> None:
            try:
                results.throw(KeyboardInterrupt())
            except BaseException as exc:  # noqa: BLE001 - looked at below
                raised.append(exc)
            stopped.set()

        threading.Thread(target=stop, daemon=True).start()
        # The stop comes back while the second call is still held (before: it waited
        # for the call, so it came back only once the test let the call go).
        assert stopped.wait(30), "the stop waited for the encoder call in flight"
        assert not encoder.release.is_set()
        assert len(raised) == 1 and isinstance(raised[0], KeyboardInterrupt)
    finally:
        encoder.release.set()


def test_runs_still_come_back_in_order_when_nothing_stops_them() -> None:
    encoder = HeldEncoder()
    encoder.release.set()
    runs = [[[i, i + 1]] for i in range(0, 10, 2)]
    out = [hidden.tolist() for _, _, hidden in _in_order(runs, padded, encoder, workers=2)]
    assert out == [[[float(i), float(i + 1)]] for i in range(0, 10, 2)]
