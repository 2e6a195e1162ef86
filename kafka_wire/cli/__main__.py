"""``python -m kafka_wire.cli``: the ``kafka-wire`` command."""

import sys

from kafka_wire.cli import main

sys.exit(main())
