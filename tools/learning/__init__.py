"""The host-free session-end pipeline: a transcript's excerpt (transcript.py), extraction
(extract.py), filing and the retry queue's re-runs (session_end.py, backlog.py), the
once-a-day maintain pass (daily.py)."""
