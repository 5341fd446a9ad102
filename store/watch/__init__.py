"""The live watcher (`cardmem watch`): the index, and with autocommit git, kept in step
with hand edits. watcher.py holds the Watcher, which composes its parts: intake.py (the
observer, events noted, debounce), indexing.py (batches and rescans applied to the index),
autocommit.py (commits), backfill.py (vectors made after the index, in a process of their
own); names.py says which paths are cards, report.py what the parts say and count.
"""
