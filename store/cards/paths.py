"""Where a store lives, and ids: the only way from user text to a file inside it.

A card's id is its path relative to the store without `.md`. Every id that comes from a
person, a model or a tool goes through `card_path`, which refuses anything that could
escape the store or address something other than a card.
"""
from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from .. import where
from ..errors import BadId, CardmemError

MAX_ID_LEN = 200
# A file name's bytes at most (NAME_MAX of common file systems); a card's file adds
# ".md". The writer's temp file shortens its copy of the name to fit (writer.py).
NAME_MAX = 255
# Folders a store owns that are never cards.
HIDDEN_PREFIX = "."
# Top-level files that document the store rather than remember anything.
NOT_CARDS = {"README.md", "DISTINCT.md"}  # DISTINCT.md: store/cards/distinct.py


def default_store() -> Path:
    """where.default_store() as a Path: $CARDMEM_STORE, else the store the current folder
    is in, else $XDG_DATA_HOME/cardmem, else ~/.local/share/cardmem."""
    return Path(where.default_store())


def id_of_path(rel: str) -> str | None:
    """The card id of a path relative to the store ("a/b.md" -> "a/b"), or None for what
    a walk of the store does not take for a card: not `.md`, a hidden file or folder on
    the way, a top-level README.md."""
    if not is_card_name(rel):
        return None
    parts = rel.split("/")
    if any(not p or p.startswith(".") for p in parts):
        return None
    if len(parts) == 1 and rel in NOT_CARDS:
        return None
    return rel[:-3]


def is_card_name(name: str) -> bool:
    """A file name a walk takes for a card: `.md`, but not `.md.md`, whose id would end
    in `.md`, which every id gate strips (see normalize_id)."""
    return name.endswith(".md") and not name.endswith(".md.md")


def normalize_id(card_id: str) -> str:
    """Check an id's text and return it without a trailing `.md`. Raises BadId."""
    if not isinstance(card_id, str) or not card_id.strip():
        raise BadId("id", "is empty")
    shown = card_id if len(card_id) <= 80 else card_id[:77] + "..."
    if "\x00" in card_id:
        raise BadId(f"id {shown!r}", "contains a NUL byte")
    if len(card_id) > MAX_ID_LEN:
        raise BadId(f"id {shown!r}", f"is longer than {MAX_ID_LEN} characters")
    if "\\" in card_id:
        raise BadId(f"id {shown!r}", "contains a backslash; ids use /")
    if card_id.startswith("/") or re.match(r"^[A-Za-z]:", card_id) or card_id.startswith("~"):
        raise BadId(f"id {shown!r}", "is an absolute path; ids are relative to the store")
    if any("\ud800" <= c <= "\udfff" for c in card_id):  # os.fsdecode's undecodable bytes
        raise BadId(f"id {shown!r}", "contains bytes that are not UTF-8")
    if card_id.endswith(".md"):
        card_id = card_id[:-3]
    if card_id.endswith(".md"):
        # `x.md` is accepted for `x`, so an id ending in .md could not be passed on and
        # read back as itself: refused, so that normalize_id(normalize_id(s)) == it.
        raise BadId(f"id {shown!r}", "ends in .md twice; a card's file name ends in one .md")
    parts = card_id.split("/")
    if any(p == ".." for p in parts):
        raise BadId(f"id {shown!r}", "climbs out of the store (..)")
    if any(p in ("", ".") for p in parts):
        raise BadId(f"id {shown!r}", "has an empty or '.' path segment")
    if any(p.startswith(HIDDEN_PREFIX) for p in parts):
        raise BadId(f"id {shown!r}", "names a hidden path; cards never live there")
    if any(unicodedata.category(c) == "Cc" for c in card_id):  # C0, DEL and C1
        raise BadId(f"id {shown!r}", "contains a control character")
    for i, p in enumerate(parts):
        if (n := len(p.encode()) + (3 if i == len(parts) - 1 else 0)) > NAME_MAX:
            raise BadId(f"id {shown!r}", f"has a file or folder name of {n} bytes; "
                                         f"file systems allow {NAME_MAX}")
    # Git pathspec magic (`:!*`, `:(glob)…`) and glob characters (`*?[`) are allowed and
    # mean themselves: every git call takes paths literally (git.py), and people name
    # notes `why?.md`, which a refusal here would leave listed but unreadable.
    return card_id


def card_path(root: Path, card_id: str) -> Path:
    """The file of a card id, guaranteed inside the store and a `.md` file (or absent)."""
    card_id = normalize_id(card_id)
    path = root / (card_id + ".md")
    real_root = os.path.realpath(root)
    # realpath resolves every symlink on the way, including missing tails' parents.
    real = os.path.realpath(path)
    if why := target_problem(real_root, real):
        raise BadId(f"id {card_id!r}", why)
    if os.path.lexists(path) and not os.path.isfile(real):
        raise BadId(f"id {card_id!r}", "is not a regular .md file")
    if not os.path.isdir(parent := os.path.dirname(real)):
        while not os.path.lexists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            rel = os.path.relpath(parent, real_root).replace(os.sep, "/")
            raise BadId(f"id {card_id!r}", f"{rel} is a file, not a folder")
    return path


def target_problem(real_root: str, real: str) -> str | None:
    """Why the resolved path of a card (through any symlinks) is no card, or None.
    The rule of card_path, and of the index for symlinked cards."""
    if os.path.commonpath([real_root, real]) != real_root:
        return "resolves outside the store (symlink)"
    if not real.endswith(".md"):
        return "does not resolve to a .md file"
    if any(p.startswith(HIDDEN_PREFIX) for p in os.path.relpath(real, real_root).split(os.sep)):
        return "resolves into a hidden folder (symlink); cards never live there"
    return None


def slugify(text: str, max_len: int = 60) -> str:
    """A file-name-safe slug of a title; non-Latin titles keep their letters."""
    text = unicodedata.normalize("NFKC", text).lower()
    slug = re.sub(r"[^\w]+", "-", text, flags=re.UNICODE).strip("-_")
    slug = slug[:max_len].rstrip("-_")
    return slug or "card"


# Every card type, in the order help texts list them.
CARD_TYPES = ("user", "feedback", "person", "entity", "project", "reference", "signal")

# What people call a card type that is not its name: the README calls feedback cards rules.
TYPE_WORDS = {"rule": "feedback", "rules": "feedback", "people": "person",
              "entities": "entity", "signals": "signal"}


def type_of_word(value: str) -> str:
    """The card type a person's word names (`rule` -> feedback), else the word as given."""
    return TYPE_WORDS.get(value.strip().lower(), value)

TYPE_FOLDERS = {
    "user": "user",
    "feedback": "feedback",
    "person": "people",
    "entity": "entities",
    "reference": "reference",
    "signal": "signals",
}
FOLDER_TYPES = {v: k for k, v in TYPE_FOLDERS.items()}


def id_for(title: str, card_type: str, project: str | None = None) -> str:
    """The id a new card of this title gets: its type's folder, or its project's."""
    if project:
        return f"projects/{slugify(project)}/{slugify(title)}"
    return f"{TYPE_FOLDERS.get(card_type, 'reference')}/{slugify(title)}"


def check_new_id(card_id: str) -> str:
    """The id a person gives a new card, checked as remember makes ids: lowercase, no
    spaces (slugify's letters). Another shape is refused with the id it would be, so a
    card is never made at an address nobody would type the same way twice."""
    cid = normalize_id(card_id)
    parts = cid.split("/")
    if any(p != p.lower() or any(c.isspace() for c in p) for p in parts):
        meant = "/".join(slugify(p) for p in parts)
        raise BadId(f"id {cid!r}", f"ids are lowercase without spaces; did you mean {meant}?")
    return cid


def project_key(name: str | None) -> str | None:
    """The one key a project goes by everywhere: its folder's name under projects/, the
    slug of what a person calls it ("Acme API" and "acme_api" are both `acme-api`)."""
    return slugify(str(name)) if name not in (None, "") else None


def project_of_id(card_id: str) -> str | None:
    """`acme-api` for `projects/acme-api/deploy`; None for a card outside projects/."""
    parts = card_id.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "projects" else None


def type_from_id(card_id: str) -> str | None:
    """The type a card's folder implies, for cards whose frontmatter says none."""
    head = card_id.split("/", 1)[0]
    if head == "projects":
        return "project"
    return FOLDER_TYPES.get(head)


def project_signals_id(project: str | None) -> str | None:
    """`projects/<project>/signals`, the card a project's unmatched session signals collect
    in (compound files them; session start shows its newest History lines); None without
    a project whose name is a safe path segment."""
    if not project:
        return None
    cid = f"projects/{project}/signals"
    try:
        return cid if normalize_id(cid) == cid else None
    except CardmemError:
        return None
