"""A replayed commit that clashes with the remote, settled so that no side loses a line.

`cardmem sync` replays local commits on the remote's (sync.py). When a commit changed
the same lines of a card as the remote did, git stops; here each such card is settled,
in the side worktree, by rules that keep every line someone wrote:

- both sides only added lines at the same place in a card's body (two History lines, two
  notes appended): the card takes both, the remote's first;
- both sides changed the card otherwise: the card takes every change that did not clash
  and, where they clashed, the remote's lines (what teammates already have); the replayed
  commit's whole version goes into a conflict card, `conflicts/<card id>-<commit>`, whose
  frontmatter says `type: conflict` and `conflict_of: <card id>`, and whose body says
  what happened and holds that version in a fence: a person merges it and deletes it;
- one side deleted (or renamed away) the card the other edited: the edited card stays;
- both sides made the same new card: as above, with nothing in common to start from.

Never settled here (the sync stops, nothing changed, as before): a clash in a file that
is not a card (`cardmem.toml`), a symlink, or text that is not UTF-8.
"""
from __future__ import annotations

import re
import tempfile
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

from ..cards.card import render
from ..cards.frontmatter import split
from ..cards.markdown import code_spans, fence
from ..cards.paths import id_of_path, normalize_id
from ..errors import BadId, CardmemError
from ..git import runner as git

FOLDER = "conflicts"
_REGULAR = ("100644", "100755")


@dataclass
class Settled:
    """One card a clash was settled on: what happened and where the other side is."""

    card: str  # the card's id
    kind: str  # both-edited | kept-edited (the other side deleted it)
    commit: str  # the replayed commit
    conflict_card: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def stages(wt: Path) -> dict[str, dict[int, tuple[str, str]]]:
    """path -> {stage: (mode, blob)} for every unmerged path (1 base, 2 remote, 3 ours)."""
    out: dict[str, dict[int, tuple[str, str]]] = {}
    for entry in git.run(wt, "ls-files", "-u", "-z").split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            mode, blob, stage = meta.split()
            out.setdefault(path, {})[int(stage)] = (mode, blob)
    return out


def unsettled(conflicted: dict[str, dict[int, tuple[str, str]]]) -> list[str]:
    """The paths these rules do not settle: not a card, or not a regular file."""
    return sorted(p for p, st in conflicted.items()
                  if id_of_path(p) is None or any(m not in _REGULAR for m, _ in st.values()))


def _blob(wt: Path, blob: str) -> str:
    """A blob's text, its bytes as they are: git's output read as text would turn CRLF
    into LF and a lone CR into a line break. UnicodeDecodeError for non-UTF-8."""
    tmp = wt / git.run(wt, "unpack-file", blob).strip()
    try:
        return tmp.read_bytes().decode("utf-8")
    finally:
        tmp.unlink(missing_ok=True)


# Markers longer than any line a card holds by chance, so the hunks below parse safely.
_SIZE = 32
_OPEN, _BASE, _SEP, _CLOSE = ("<" * _SIZE + " remote", "|" * _SIZE + " base", "=" * _SIZE,
                              ">" * _SIZE + " local")


def _merge(wt: Path, ours: str, base: str, theirs: str) -> tuple[str, bool]:
    """(merged text, whether any hunk clashed): every change of both sides that does not
    touch the other's; where both only added lines at one place in the body (two History
    lines, two appended notes), both, the remote's first; any other clash, the remote's."""
    with tempfile.TemporaryDirectory(prefix="cardmem-merge-") as tmp:
        files = []
        for name, text in (("remote", ours), ("base", base), ("local", theirs)):
            (Path(tmp) / name).write_text(text, encoding="utf-8", newline="")
            files.append(str(Path(tmp) / name))
        # The result into the first file, not stdout: read as bytes, its line ends stay.
        proc = git.call(wt, ["merge-file", "--diff3", f"--marker-size={_SIZE}",
                             "-L", "remote", "-L", "base", "-L", "local", *files])
        if proc.returncode < 0 or proc.returncode > 127:
            raise ValueError(proc.stderr.strip() or f"git merge-file exit {proc.returncode}")
        result = Path(files[0]).read_bytes().decode("utf-8")
    if proc.returncode == 0:
        return result, False
    fm = split(ours) is not None  # the remote's card has a frontmatter block
    out: list[str] = []
    parts: dict[str, list[str]] = {}
    section, at, clashed = "", 0, False
    for line in result.splitlines(keepends=True):
        tag = line.rstrip("\r\n")
        if not section and tag == _OPEN:
            section, at, parts = "remote", len(out), {"remote": [], "base": [], "local": []}
        elif section == "remote" and tag == _BASE:
            section = "base"
        elif section == "base" and tag == _SEP:
            section = "local"
        elif section == "local" and tag == _CLOSE:
            remote = parts["remote"]
            if remote and not remote[-1].endswith("\n"):
                remote = [*remote[:-1], remote[-1] + "\n"]
            # In the body only if the merged lines before it already close the frontmatter
            # (counting the remote's lines would miss those the local side added above).
            if not parts["base"] and (not fm or split("".join(out[:at])) is not None):
                # Lines both begin with (a `## History` heading each side opened) once.
                local, same = parts["local"], 0
                while same < min(len(remote), len(local)) and remote[same] == local[same]:
                    same += 1
                out += remote + local[same:]
            else:
                out += parts["remote"]
                clashed = True
            section = ""
        elif section:
            parts[section].append(line)
        else:
            out.append(line)
    return "".join(out), clashed


def _fenced(text: str) -> str:
    """text in a backtick fence longer than any backtick fence inside it (markdown.py's
    rule), so no line of the version closes it early."""
    runs = (fence(line) for line in text.splitlines())
    longest = max((len(r) for r in runs if r.startswith("`")), default=0)
    outer = "`" * max(3, longest + 1)
    return f"{outer}markdown\n{text.rstrip(chr(10))}\n{outer}\n"


def conflict_id(wt: Path, card: str, commit: str) -> str:
    """A free id under conflicts/ for this card's clash in this commit."""
    for n in range(100):
        tail = f"-{commit[:10]}" + (f"-{n}" if n else "")
        try:
            cid = normalize_id(f"{FOLDER}/{card}{tail}")
        except BadId:  # too long a name: the commit alone
            cid = f"{FOLDER}/{commit[:10]}{tail[11:]}"
        if not (wt / f"{cid}.md").exists():
            return cid
    raise ValueError(f"no free conflict card id for {card}")


def conflict_text(card: str, commit: str, subject: str, author: str, onto: str,
                  version: str) -> str:
    """The conflict card: frontmatter that says so, what happened, the version kept."""
    meta = {"title": f"Conflict: {card} ({author}, {commit[:10]})", "type": "conflict",
            "conflict_of": card, "created": date.today()}
    body = (f"`cardmem sync` replayed commit {commit[:10]} ({subject!r}, by {author}) onto "
            f"the remote's {onto[:10]}, which had changed the same lines of [[{card}]]. "
            f"[[{card}]] keeps the remote's lines there and every change of this commit "
            "that did not clash; below is the card as this commit left it. Merge what is "
            f"missing into [[{card}]], then delete this card.\n\n" + _fenced(version))
    return render(meta, body)


def settle(wt: Path, commit: str, onto: str) -> list[Settled]:
    """Settle every conflicted card of the commit being replayed in wt, and stage it.

    The caller has checked `unsettled` is empty. Raises UnicodeDecodeError for text
    that is not UTF-8 (the caller stops the sync).
    """
    subject, author = git.run(wt, "log", "-1", "--format=%s%x00%an", commit).rstrip(
        "\n").split("\0", 1)
    done: list[Settled] = []
    for path, st in sorted(stages(wt).items()):
        card = id_of_path(path)
        assert card is not None
        target = wt / path
        if 2 in st and 3 in st:
            base = _blob(wt, st[1][1]) if 1 in st else ""
            ours, theirs = _blob(wt, st[2][1]), _blob(wt, st[3][1])
            merged, clashed = _merge(wt, ours, base, theirs)
            target.write_text(merged, encoding="utf-8", newline="")
            git.run(wt, "add", "--", path)
            if clashed:
                cid = conflict_id(wt, card, commit)
                rel = f"{cid}.md"
                (wt / rel).parent.mkdir(parents=True, exist_ok=True)
                (wt / rel).write_text(conflict_text(card, commit, subject, author, onto,
                                                    theirs), encoding="utf-8", newline="")
                git.run(wt, "add", "--", rel)
                done.append(Settled(card, "both-edited", commit, cid))
        elif 2 in st or 3 in st:
            # One side deleted or renamed it away, the other has it: it stays.
            mode, blob = st.get(3) or st[2]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_blob(wt, blob), encoding="utf-8", newline="")
            git.run(wt, "add", "--", path)
            git.run(wt, "update-index", "--chmod=" + ("+x" if mode == "100755" else "-x"),
                    "--", path)
            done.append(Settled(card, "kept-edited", commit))
        else:  # both removed it (each renamed it elsewhere): nothing to keep here
            target.unlink(missing_ok=True)
            git.run(wt, "rm", "-q", "--cached", "--ignore-unmatch", "--", path)
    return done


_MARKER = re.compile(r"^(<{7}|>{7})(?: |\r?$)", re.M)


def has_markers(text: str) -> bool:
    """Whether text holds both ends of a git conflict (`<<<<<<<` … `>>>>>>>` lines) outside
    code fences: a merge someone committed unfinished."""
    spans = code_spans(text)
    ends = {m.group(1)[0] for m in _MARKER.finditer(text)
            if not any(a <= m.start() < b for a, b in spans)}
    return ends == {"<", ">"}


def marked_cards(root: Path, since: str | None, new: str) -> list[str]:
    """Cards that new changes from since (None: the whole tree) and that hold conflict
    markers since does not: what a sync must not hand teammates as clean cards."""
    # One `git grep` over the tree finds the few candidates; only they are read.
    proc = git.call(root, ["grep", "-l", "-z", "-I", "-E", "^(<{7}|>{7})( |$)", new, "--"])
    if proc.returncode not in (0, 1):
        raise CardmemError("git grep", proc.stderr.strip() or f"exit {proc.returncode}")
    hits = {h.split(":", 1)[1] for h in proc.stdout.split("\0") if h}
    if since is not None and hits:
        hits &= set(p for p in git.run(root, "diff", "--name-only", "--no-renames",
                                        "--diff-filter=AM", "-z", since, new, "--").split("\0"))
    found = []
    for path in sorted(p for p in hits if id_of_path(p)):
        try:
            if not has_markers(git.run(root, "cat-file", "blob", f"{new}:{path}")):
                continue
            if since is not None and has_markers(git.run(
                    root, "cat-file", "blob", f"{since}:{path}", check=False)):
                continue  # the remote holds it so already: not this sync's doing
        except UnicodeDecodeError:
            continue
        found.append(path)
    return found
