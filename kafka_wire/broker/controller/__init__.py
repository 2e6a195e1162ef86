"""The KRaft controller's parts: the ``__cluster_metadata`` records and their framing
(:mod:`.records`), the metadata image every node builds from them (:mod:`.image`), Kafka's
partition-change and election rules (:mod:`.elections`) and the active controller
(:mod:`.controller`)."""
