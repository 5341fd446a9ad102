"""The card format: parsing rules, malformed cards, and byte-preserving edits."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardmem.store.cards import card as cardlib
from cardmem.store.cards.card import CardProblem, append_history, append_section, parse, set_key
from cardmem.store.errors import CardmemError

# --- parsing rules ------------------------------------------------------------------


def test_every_key_is_optional() -> None:
    card = parse("Just a body.\n", "reference/plain")
    assert card.meta == {}
    assert card.title == "plain"
    assert card.type == "reference"
    assert card.body == "Just a body.\n"
    assert (card.description, card.aliases, card.tags, card.project, card.status) == (
        "", [], [], None, "active")


def test_empty_frontmatter_is_fine() -> None:
    card = parse("---\n---\nbody\n", "feedback/x")
    assert card.meta == {} and card.body == "body\n" and card.type == "feedback"


def test_unknown_keys_are_kept() -> None:
    text = "---\ntitle: T\nowner: platform\nx-review:\n  by: mara\n  on: 2026-11-30\n---\nb\n"
    card = parse(text, "entities/t")
    assert card.meta["owner"] == "platform"
    assert card.meta["x-review"] == {"by": "mara", "on": "2026-11-30"}


def test_yes_no_on_stay_strings_and_dates_stay_text() -> None:
    text = ("---\ntags: [yes, no, on, off, y, n, true]\ncreated: 2026-11-30\n"
            "last_verified: 2026-11-30T10:00:00Z\nproject: on\nflag: false\n---\n")
    card = parse(text, "reference/x")
    assert card.tags == ["yes", "no", "on", "off", "y", "n", "True"]
    assert card.meta["tags"][-1] is True  # real YAML booleans are still booleans
    assert card.meta["created"] == "2026-11-30"
    assert card.meta["last_verified"] == "2026-11-30T10:00:00Z"
    assert card.project == "on"
    assert card.meta["flag"] is False


def test_title_from_frontmatter_then_heading_then_file_name() -> None:
    assert parse("---\ntitle: From FM\n---\n# Heading\n", "reference/f").title == "From FM"
    assert parse("---\ntype: entity\n---\nintro\n\n# The Heading  \n", "entities/f").title == \
        "The Heading"
    assert parse("# Closed heading ##\n", "reference/f").title == "Closed heading"
    assert parse("## Only a level-2\n", "reference/file-name").title == "file-name"
    assert parse("---\ntitle: ''\n---\n# H\n", "reference/f").title == "H"
    assert parse("---\ntitle: 2026\n---\n", "reference/f").title == "2026"


def test_title_ignores_comments_in_code_fences() -> None:
    text = "---\ntype: reference\n---\nSteps:\n\n```bash\n# install deps\nmake\n```\n\n# Real\n"
    assert parse(text, "reference/setup").title == "Real"
    assert parse("```sh\n# not a title\n```\n", "reference/setup").title == "setup"
    # The index's fast frontmatter path names the card the same way.
    from cardmem.store.index import fastmeta
    from cardmem.store.index import rows as indexmod

    assert fastmeta.quick_meta("type: reference\n") is not None  # the fast path is taken
    assert indexmod.text_row(cardlib, fastmeta, text, "reference/setup")[0][1] == "Real"


@pytest.mark.parametrize("card_id, expected", [
    ("feedback/a", "feedback"), ("user/me", "user"), ("people/p", "person"),
    ("entities/e", "entity"), ("projects/acme/deploy", "project"), ("reference/r", "reference"),
    ("signals/2026-11-30", "signal"), ("elsewhere/x", None), ("top", None),
])
def test_type_from_folder_when_absent(card_id: str, expected: str | None) -> None:
    assert parse("body\n", card_id).type == expected
    assert parse("---\ntype: entity\n---\n", card_id).type == "entity"


def test_crlf_and_bom_cards_parse() -> None:
    card = parse("\ufeff---\r\ntitle: Win\r\ntags: [a]\r\n---\r\nbody\r\n", "reference/w")
    assert card.title == "Win" and card.tags == ["a"] and card.body == "body\r\n"


def test_every_example_card_parses() -> None:
    from cardmem.store.store import Store

    root = Path(__file__).resolve().parents[3] / "cards"
    cards, problems = Store(root).scan()
    assert problems == []
    assert len(cards) >= 40
    assert all(c.type for c in cards)


# --- malformed cards ------------------------------------------------------------------

MALFORMED = {
    "reference/broken-yaml": (b"---\ntitle: [unclosed\ntags: x\n---\nbody\n", "bad YAML frontmatter"),
    "reference/list-yaml": (b"---\n- a\n- b\n---\nbody\n", "frontmatter is not a mapping"),
    "reference/binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary content (NUL byte)"),
    "reference/latin1": ("---\ntitle: Caf\xe9\n---\n".encode("latin-1"), "not UTF-8 (byte 0xe9"),
    "reference/huge": (b"---\ntitle: big\n---\n" + b"a" * (1024 * 1024), "too large"),
}


def _plant_malformed(root: Path) -> dict[str, tuple[bytes, int]]:
    """Write the malformed cards with an old mtime; return their bytes and mtimes."""
    seen = {}
    for cid, (data, _) in MALFORMED.items():
        p = root / f"{cid}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.utime(p, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
        seen[cid] = (data, p.stat().st_mtime_ns)
    return seen


def _assert_untouched(root: Path, seen: dict[str, tuple[bytes, int]]) -> None:
    for cid, (data, mtime) in seen.items():
        p = root / f"{cid}.md"
        assert p.read_bytes() == data, cid
        assert p.stat().st_mtime_ns == mtime, cid


def test_malformed_cards_are_reported_and_untouched(store) -> None:
    store.new("reference/good", title="Good", body="fine")
    seen = _plant_malformed(store.root)
    cards, problems = store.scan()
    assert [c.id for c in cards] == ["reference/good"]
    by_id = {p.id: p for p in problems}
    assert set(by_id) == set(MALFORMED)
    for cid, (_, reason) in MALFORMED.items():
        assert reason in by_id[cid].reason, (cid, by_id[cid].reason)
        assert by_id[cid].path == str(store.root / f"{cid}.md")
    assert "line" in by_id["reference/broken-yaml"].reason  # says where in the file
    # Reading, writing around them and failed writes to them change none of their bytes.
    for cid in MALFORMED:
        with pytest.raises(CardmemError) as exc:
            store.read(cid)
        assert str(store.root / f"{cid}.md") in str(exc.value)
        with pytest.raises(CardmemError):
            store.update_text(cid, lambda t: t + "more\n", "edit")
    with pytest.raises(CardmemError):
        store.remember("broken yaml", "appended?")
    store.new("reference/another", body="written while broken cards sit there")
    _assert_untouched(store.root, seen)
    # None of them was swept into a commit.
    tracked = subprocess.run(["git", "-C", str(store.root), "ls-files"], capture_output=True,
                             text=True, check=True).stdout.split()
    assert not any(t.startswith("reference/") and t[:-3] in MALFORMED for t in tracked)


def test_map_cli_lists_malformed_cards_with_path_and_reason(store) -> None:
    store.new("reference/good", title="Good", body="fine")
    seen = _plant_malformed(store.root)
    proc = subprocess.run([sys.executable, "-m", "cardmem.tools.cli", "map", "--json",
                           "--store", str(store.root)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    import json

    rows = json.loads(proc.stdout)
    assert [c["id"] for c in rows if "error" not in c] == ["reference/good"]
    errors = {c["id"]: c["error"] for c in rows if "error" in c}
    assert set(errors) == set(MALFORMED)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == len(MALFORMED)
    for cid, (_, reason) in MALFORMED.items():
        line = next(ln for ln in lines if f"{cid}.md" in ln)
        assert line.startswith("cardmem: ") and reason in line
    _assert_untouched(store.root, seen)


def test_symlink_out_of_the_store_is_a_problem_not_a_card(store, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("---\ntitle: Secret\n---\n")
    (store.root / "reference").mkdir()
    (store.root / "reference" / "leak.md").symlink_to(outside)
    cards, problems = store.scan()
    assert cards == []
    assert [(p.id, p.reason) for p in problems] == [
        ("reference/leak", "resolves outside the store (symlink)")]


def test_decode_limits() -> None:
    assert cardlib.decode(b"a" * cardlib.MAX_CARD_BYTES) == "a" * cardlib.MAX_CARD_BYTES
    with pytest.raises(CardProblem, match="too large"):
        cardlib.decode(b"a" * (cardlib.MAX_CARD_BYTES + 1))


# --- byte-preserving edits: unit cases ---------------------------------------------------


def test_set_key_changes_one_line() -> None:
    text = "---\n# who owns it\ntitle: Old   # keep?\ntags:\n  - a\n  - b\n\nowner: x\n---\nbody\n"
    out = set_key(text, "tags", ["c"])
    assert out == "---\n# who owns it\ntitle: Old   # keep?\ntags: [c]\n\nowner: x\n---\nbody\n"
    assert set_key(text, "new", "v") == text.replace("owner: x\n", "owner: x\nnew: v\n")


def test_set_key_crlf_block_list() -> None:
    text = "---\r\ntags:\r\n  - a\r\nowner: x\r\n---\r\n"
    out = set_key(text, "tags", ["b"])
    assert out == "---\r\ntags: [b]\r\nowner: x\r\n---\r\n"


def test_set_key_without_frontmatter_adds_one() -> None:
    assert set_key("body\n", "status", "archived") == "---\nstatus: archived\n---\nbody\n"


def test_set_key_value_with_line_breaks_stays_on_one_line() -> None:
    text = "---\r\ntitle: a\r\n---\r\n"
    for value in ("two\nlines", "nel\x85x", "ls\u2028x", "ff\x0cx", "trailing nbsp\xa0"):
        out = set_key(text, "description", value)
        assert out.count("\n") == text.count("\n") + 1, repr(out)
        assert parse(out, "reference/x").meta["description"] == value


def test_set_key_around_unicode_line_breaks_in_another_value() -> None:
    text = "---\ndescription: 'a\x85b\u2028c'\ntags: [x]\n---\n"
    out = set_key(text, "description", "d")
    assert out == "---\ndescription: d\ntags: [x]\n---\n"


def test_append_history_creates_and_extends() -> None:
    text = "---\ntitle: T\n---\nBody\n"
    once = append_history(text, "2026-11-30 · first")
    assert once == text + "\n## History\n- 2026-11-30 · first\n"
    twice = append_history(once + "\n\n", "second")
    assert twice == once + "- second\n\n\n"
    assert cardlib.history(twice) == ["2026-11-30 · first", "second"]


def test_append_history_entry_is_one_line() -> None:
    out = append_history("b\n", "line one\nline two\r\n")
    assert out.endswith("- line one line two\n")


def test_append_section_goes_before_history() -> None:
    text = "Body\n\n## History\n- old\n"
    out = append_section(text, "2026-11-30", "new fact")
    assert out == "Body\n\n## 2026-11-30\n\nnew fact\n\n## History\n- old\n"


# --- byte-preserving edits: property tests ------------------------------------------------

WORD = st.sampled_from(["alpha", "beta", "yes", "no", "on", "off", "null", "~", "2026-11-30",
                        "3.5", "42", "deploy", "über", "naïve", "x-y", "a.b", "0x1F", "True"])
TEXT_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r")
# What YAML accepts raw in a file (its "printable" set).
YAML_CHARS = st.characters(blacklist_categories=("Cs", "Cc", "Cn", "Co"),
                           blacklist_characters="\ufeff")
KEYS = ["title", "type", "description", "aliases", "tags", "tag", "project", "status",
        "supersedes", "created", "last_verified", "owner", "x-review", "Custom_Key", "on",
        "yes", "2026", "priority"]


@dataclass
class Entry:
    key: str
    lines: list[str]  # without newlines


@st.composite
def entries(draw, key: str) -> Entry:
    sep = draw(st.sampled_from([": ", ":  ", " : ", ":\t"]))
    words = draw(st.lists(WORD, min_size=1, max_size=4))
    plain = " ".join(words)
    trail = draw(st.sampled_from(["", "", "  ", "\t", "  # a comment", " # title: fake"]))
    style = draw(st.sampled_from(["plain", "squote", "dquote", "flow", "flow-multi", "block",
                                  "block0", "literal", "folded", "plain-multi", "empty",
                                  "nested", "oddchars"]))
    k = key
    if style == "plain":
        return Entry(k, [f"{k}{sep}{plain}{trail}"])
    if style == "squote":
        return Entry(k, [f"{k}{sep}'{plain} it''s'{trail}"])
    if style == "dquote":
        return Entry(k, [f'{k}{sep}"{plain} \\"q\\" \\u00e9"{trail}'])
    if style == "flow":
        return Entry(k, [f"{k}{sep}[{', '.join(words)}]{trail}"])
    if style == "flow-multi":
        return Entry(k, [f"{k}{sep}[{words[0]},", *[f"  {w}," for w in words[1:]], "  end]"])
    if style in ("block", "block0"):
        ind = "  " if style == "block" else ""
        return Entry(k, [f"{k}:{trail}", *[f"{ind}- {w}" for w in words]])
    if style in ("literal", "folded"):
        mark = draw(st.sampled_from(["|", "|-", ">", ">+"] if style == "literal" else [">", ">-"]))
        body = [f"  {w} line" for w in words]
        if len(body) > 1 and draw(st.booleans()):
            body.insert(1, "")
        return Entry(k, [f"{k}: {mark}", *body])
    if style == "plain-multi":
        return Entry(k, [f"{k}{sep}{words[0]}", *[f"  {w}" for w in words[1:]], "  tail"])
    if style == "empty":
        return Entry(k, [f"{k}:{trail}"])
    if style == "nested":
        return Entry(k, [f"{k}:", "  by: mara", f"  on: {words[0]}", "  list: [a, b]"])
    odd = draw(st.text(YAML_CHARS, max_size=12)).replace("\\", "/").replace('"', "'")
    return Entry(k, [f'{k}{sep}"{odd}\x85\u2028{odd}"'])


@dataclass
class Generated:
    text: str
    nl: str
    has_fm: bool
    keys: list[str]
    spans: dict[str, tuple[int, int]]  # key -> (start, end) offsets of its lines
    fm_close: int  # offset of the closing fence line (or 0 without frontmatter)


BODY_BLOCKS = st.sampled_from([
    ["Some text about deploys.", "Second line with trailing spaces   "],
    ["# A Title"],
    ["## Notes", "", "- a list item", "- another"],
    ["### Deeper", "text"],
    ["```bash", "# install", "## History", "make test", "```"],
    ["~~~", "## not a heading", "~~~"],
    ["````md", "```", "## History inside", "```", "````"],
    ["---"],
    ["", ""],
    ["\tindented with a tab"],
    ["Ünïcödé ✓ and a form\x0cfeed and a line\u2028separator"],
])


@st.composite
def cards(draw) -> Generated:
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    has_fm = draw(st.booleans()) or draw(st.booleans())
    out: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=6)) if has_fm else []
    pos = 0

    def put(line: str) -> None:
        nonlocal pos
        out.append(line + nl)
        pos += len(line) + len(nl)

    fm_close = 0
    if has_fm:
        bom = "\ufeff" if draw(st.integers(0, 9)) == 0 else ""
        put(bom + "---" + draw(st.sampled_from(["", "", "  "])))
        for key in keys:
            for filler in draw(st.lists(st.sampled_from(["# a comment", "", "#title: not a key"]),
                                        max_size=2)):
                put(filler)
            entry = draw(entries(key))
            start = pos
            for ln in entry.lines:
                put(ln)
            spans[key] = (start, pos)
        if draw(st.booleans()):
            put("")
        fm_close = pos
        put(draw(st.sampled_from(["---", "---", "...", "--- "])))
    blocks = draw(st.lists(BODY_BLOCKS, max_size=5))
    while not has_fm and blocks and blocks[0] == ["---"]:
        blocks = blocks[1:]
    for block in blocks:
        for ln in block:
            put(ln)
    if draw(st.booleans()):  # a History section, maybe followed by more
        put("## History")
        if draw(st.booleans()):
            put("")
        for i in range(draw(st.integers(0, 3))):
            put(f"- 2026-11-{10 + i} · session abc{i} · Decision: item {i}")
        for _ in range(draw(st.integers(0, 2))):
            put("")
        if draw(st.booleans()):
            put("## After history")
            put("more text")
    text = "".join(out)
    if text and draw(st.booleans()):  # no newline at the end of the file
        text = text[: -len(nl)]
        if fm_close >= len(text):
            fm_close = len(text)
    return Generated(text, nl, has_fm, keys, spans, fm_close)


def _changed_region(old: str, new: str) -> tuple[int, int]:
    """[start, end) in old outside which old and new are byte-identical."""
    p = 0
    n = min(len(old), len(new))
    while p < n and old[p] == new[p]:
        p += 1
    s = 0
    while s < n - p and old[-1 - s] == new[-1 - s]:
        s += 1
    return p, len(old) - s


def _meta(text: str) -> dict:
    return parse(text, "reference/generated").meta


def _lines(text: str) -> list[str]:
    return text.split("\n")


VALUES = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.integers(-10**6, 10**6),
    st.booleans(),
    st.none(),
    st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=8), max_size=4),
    st.sampled_from(["yes", "no", "on", "2026-11-30", "", " lead", "trail ", "# hash", "a: b",
                     "- dash", "[x]", "{y}", "two\nlines", "it's \"q\"", "@at", "`t", "%p",
                     "!bang", "&a", "*s", "|p", ">g", "---", "...", "key:", "\t", "x\xa0"]),
)

PROPERTY = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(card=cards(), key=st.sampled_from(KEYS), value=VALUES)
def test_set_key_changes_only_that_key(card: Generated, key: str, value) -> None:
    before = _meta(card.text)
    new = set_key(card.text, key, value)
    after = _meta(new)
    assert after[key] == value
    assert {k: v for k, v in after.items() if k != key} == \
        {k: v for k, v in before.items() if k != key}
    assert parse(new, "r/x").body == parse(card.text, "r/x").body
    if key in card.spans:
        lo, hi = card.spans[key]
    elif card.has_fm:
        lo = hi = card.fm_close
    else:
        lo = hi = 0
    # new == old[:lo] + (the key's new lines) + old[hi:]: nothing outside the key changed.
    old = card.text
    assert new.startswith(old[:lo]) and new.endswith(old[hi:]), (lo, hi, new)
    assert len(new) >= lo + len(old) - hi
    # The replacement is whole lines in the card's own line ending.
    assert new.count("\n") - card.text.count("\n") == 1 - card.text[lo:hi].count("\n") + (
        2 if not card.has_fm else 0)
    if "\r\n" in card.text:
        assert new.count("\n") == new.count("\r\n")


def _only_added(old: str, new: str) -> list[str]:
    """The lines new adds to old; fails unless new is old with whole lines inserted."""
    start, end = _changed_region(old, new)
    assert start == end, "original bytes were changed, not just added to"
    added = new[start: start + len(new) - len(old)]
    assert new == old[:start] + added + old[start:]
    at_eof_without_nl = start == len(old) and old and not old.endswith("\n")
    if not at_eof_without_nl:
        # Insertion at a line boundary, of whole lines. (The common prefix may have run
        # into the inserted text by up to one line; normalise by rotating.)
        while start > 0 and old[start - 1] != "\n":
            start -= 1
            added = new[start: start + len(added)]
        assert new == old[:start] + added + old[start:]
        assert added.endswith("\n")
        return added[:-1].split("\n")
    # At the end of a file without a final newline: the last line gets its line ending.
    assert added.startswith(("\n", "\r\n"))
    return added.split("\n", 1)[1].removesuffix("\n").split("\n")


@PROPERTY
@given(card=cards(), entry=st.text(TEXT_CHARS, min_size=1, max_size=40).filter(str.strip))
def test_append_history_only_adds_lines(card: Generated, entry: str) -> None:
    before = parse(card.text, "r/x")
    new = append_history(card.text, entry)
    added = _only_added(card.text, new)
    nl_r = "\r" if "\r\n" in card.text else ""
    line = f"- {entry.strip()}{nl_r}"
    assert [a for a in added if a.strip()] in ([line], [f"## History{nl_r}", line])
    after = parse(new, "r/x")
    assert after.meta == before.meta
    assert cardlib.history(after.text) == cardlib.history(before.text) + [entry.strip()]
    if "\r\n" in card.text:
        assert new.count("\n") == new.count("\r\n")


@PROPERTY
@given(card=cards(), heading=st.sampled_from(["2026-11-30", "Later", "Ünïcode"]),
       body=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60)
       .filter(lambda b: b.strip() and "```" not in b and "~~~" not in b))
def test_append_section_only_adds_lines(card: Generated, heading: str, body: str) -> None:
    before = parse(card.text, "r/x")
    new = append_section(card.text, heading, body)
    added = _only_added(card.text, new)
    assert f"## {heading}" in [a.rstrip("\r") for a in added]
    after = parse(new, "r/x")
    assert after.meta == before.meta
    assert cardlib.history(after.text) == cardlib.history(before.text)
    heads = [h[2] for h in cardlib.headings(new) if h[1] == 2]
    if "History" in heads:
        assert heads.index(heading) < heads.index("History")
    if "\r\n" in card.text:
        assert new.count("\n") == new.count("\r\n")


def test_a_new_card_keeps_emoji_and_other_scripts_as_typed() -> None:
    meta = {"title": "Café déploiement 🚀", "aliases": ["日本語のメモ", "naïve"], "type": "reference"}
    text = cardlib.render(meta, "Body 🙂")
    assert "Café déploiement 🚀" in text and "日本語のメモ" in text and "\\U" not in text
    assert cardlib.parse(text, "reference/x").meta == meta


def test_remove_key_takes_out_its_lines_only() -> None:
    from cardmem.store.cards.card import remove_key

    text = ("---\r\ntitle: T\r\nproposed_by: mcp\r\ntags:\r\n  - a\r\n  - b\r\n# kept\r\n"
            "status: proposed\r\n---\r\nproposed_by: body stays\r\n")
    assert remove_key(text, "proposed_by") == text.replace("proposed_by: mcp\r\n", "", 1)
    assert remove_key(text, "tags") == text.replace("tags:\r\n  - a\r\n  - b\r\n", "")
    assert remove_key(text, "missing") == text
    assert remove_key("no frontmatter\n", "title") == "no frontmatter\n"
    # Adding a key then removing it gives back every byte.
    assert remove_key(set_key(text, "new", "v"), "new") == text
