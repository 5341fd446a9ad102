"""The live watcher (`cardmem watch`): the index, and with autocommit git, kept in step
with hand edits. watcher.py holds the Watcher and its threads; its rooms by role are
names.py (which paths are cards), intake.py (events, the observer, debounce),
indexing.py (batches and rescans applied to the index) and autocommit.py (commits).
"""
