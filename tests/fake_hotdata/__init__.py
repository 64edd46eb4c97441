"""A loopback fake Hotdata server for tests, built from the engine's open parts.

It is a test stand-in, not the Hotdata engine: DataFusion answers SQL, Tantivy answers
``bm25_search``, USearch answers the index-served vector shape, and the control plane enforces
the engine rules the project depends on.  See README.md in this folder.
"""

from .server import FakeHotdata
from .state import ApiError, FakeState, HttpFault, JobFault

__all__ = ["ApiError", "FakeHotdata", "FakeState", "HttpFault", "JobFault"]
