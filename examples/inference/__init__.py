"""Review scoring on a container actor that uses a GPU when its task has one (`actors/sentiment.py`),
then a hop of minutes that outlives its queue's visibility timeout (`actors/reindex.py`). README.md
explains the example; `python -m bench.container_actor` measures it."""
