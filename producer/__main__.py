"""``python -m producer`` is ``hql-semantics``."""

import sys

from producer.cli import main

sys.exit(main())
