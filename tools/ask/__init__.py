"""Answering a question (`cardmem ask`): rung 1 and the walk (answer.py, walk*.py), the
receipts (receipts.py, receipt_stats.py) and the judge (judge.py, completeness.py)."""
