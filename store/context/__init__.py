"""Rung 1, the pile: what sits at the right addresses, in a fixed order, within a budget.

Two piles are built here: `session_context` (a coding session starts: `cardmem context`,
the SessionStart hook; session.py) and `question_context` (someone asks: `cardmem ask`,
under the walk; question.py), from the blocks in pile.py and git's recent changes
(recent.py).
"""
from .pile import Pile
from .question import find_person, named_cards, question_context
from .session import project_for, session_context

__all__ = ["Pile", "find_person", "named_cards", "project_for", "question_context",
           "session_context"]
