import sys

from kafka_wire.codegen.generate import main

sys.exit(main())
