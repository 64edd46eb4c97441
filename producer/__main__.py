"""``python -m producer`` is ``hql-semantics``."""

from producer.cli import entry

entry()
