"""Per-prompt memory: the cards this prompt is about, that this session has not yet seen.

Hosts that run a hook on each prompt and add its text to the model's next request
(Claude Code's and Codex's UserPromptSubmit, Gemini CLI's BeforeAgent) get, within a
small budget, the cards a lexical search of the prompt finds with more than low
confidence or names by title, minus those already shown this session (at session start or for an earlier
prompt). Session start then needs to carry only the rules and a short digest.

What was shown is kept per session in .cardmem/shown-sessions.json (the newest
MAX_SESSIONS sessions). Lexical search only: the vector model's load is not the
prompt's to wait for.
"""
from __future__ import annotations

import time
from pathlib import Path
# Imports inside functions: a prompt with no store, or no words to search, opens no index.

SHOWN = "shown-sessions.json"
BUDGET = 1_500  # characters per prompt: a few cards' gist, never a second session start
LIMIT = 4  # cards per prompt at most


def _path(root: Path) -> Path:
    return Path(root) / ".cardmem" / SHOWN


def _load(root: Path) -> dict:
    from . import session_notes

    return session_notes.load(str(_path(root)))


def _ids(entry: object) -> set[str]:
    """The ids a session's entry holds; none from an entry of another shape (a hand edit,
    a torn write): the prompt hook goes on, and its next note replaces the entry."""
    ids = entry.get("ids") if isinstance(entry, dict) else None
    return {i for i in ids if isinstance(i, str)} if isinstance(ids, list) else set()


def shown(root: Path, session: str) -> set[str]:
    """The cards this session has been shown so far."""
    return _ids(_load(root).get(session)) if session else set()


def note_shown(root: Path, session: str, ids: list[str]) -> None:
    """Add ids to what this session has seen (best effort: a lost note only repeats a card)."""
    if not session or not ids:
        return
    data = _load(root)
    data[session] = {"ids": sorted(_ids(data.get(session)) | set(ids)), "at": time.time()}
    from . import session_notes

    session_notes.save(str(_path(root)), data, lambda note: note["at"])


def own_context_out(prompt: str) -> str:
    """The prompt without the hooks' context a host put in front of it: in `gemini -p`
    Gemini CLI prepends session start's (ours) inside <hook_context> … </hook_context>."""
    while "<hook_context>" in prompt:
        head, _, rest = prompt.partition("<hook_context>")
        prompt = head + rest.partition("</hook_context>")[2]
    return prompt


def prompt_context(root: Path, session: str, prompt: str,
                   budget: int = BUDGET) -> tuple[str, str]:
    """(the text to add to this prompt, "" for none; the outcome for the hook log)."""
    prompt = own_context_out(prompt)
    if not prompt.strip():
        return "", "nothing: empty prompt"
    from cardmem.store.git.head_file import require_store
    from cardmem.store.index.db import Index
    from cardmem.store.search.query import search_index

    require_store(Path(root))
    idx = Index(root=root)
    try:
        idx.refresh()
        found = search_index(idx, prompt, limit=LIMIT * 3).results
    finally:
        idx.close()
    seen = shown(root, session)
    # A prompt is a sentence, not a query: most of its words match nothing, so a card it
    # names by title counts as much as one the search is confident of.
    picks = [r for r in found if r["id"] not in seen and (
        r.get("confidence") != "low" or {"title", "title~"} & set(r.get("matched") or []))][:LIMIT]
    if not picks:
        return "", f"nothing new: {len(found)} found, {len(seen)} already shown"
    head = "cardmem memory, cards about this prompt (`cardmem show ID` has the whole card):\n"
    lines, used = [], len(head)
    for r in picks:
        line = f"- {r.get('title') or r['id']} (`{r['id']}`): {' '.join(str(r.get('snippet') or '').split())}\n"
        if used + len(line) > budget:
            line = line[:max(0, budget - used - 2)].rstrip() + "…\n" if not lines else ""
        if not line:
            break
        lines.append(line)
        used += len(line)
    ids = [r["id"] for r in picks[:len(lines)]]
    note_shown(root, session, ids)
    return head + "".join(lines), f"ok: {len(ids)} card(s), {used} chars: {', '.join(ids)}"
