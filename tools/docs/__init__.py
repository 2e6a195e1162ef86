"""The generators of ``docs/reference/``: every page there is written from the code's own data.

``make docs`` (``python -m tools.docs``) rewrites the pages; ``python -m tools.docs --check``
names the stale ones and fails, and ``tests/test_docs.py`` runs the same comparison. Each page is
one function returning its Markdown:

``state_machines``  the transition tables of the connections, the SASL mechanisms, the classic
                    group and the partition replica, drawn as Mermaid state diagrams
``coverage``        every API and version the codec knows, from ``schemas/``
``configuration``   broker properties, topic configs and their broker synonyms, group settings

The tables stay where the code uses them; only the rendering lives here.
"""
