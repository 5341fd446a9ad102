"""Re-imports over random edits never undo a person's no, never lose an item, and leave
the rules' derived state true (hypothesis, real git).

A random CLAUDE.md (sections of rules, sections of prose) is imported; then, for a few
rounds, the source is edited (items added, removed, reordered, moved between sections,
reworded; headings renamed) and so is the store (cards deleted by hand, committed or not;
cards edited), and the source imported again. This test keeps its own model of which
item is which (an identity per item, kept through rewordings and moves) and checks after
every import:

- no card a person deleted is alive again, under its id or another;
- every item of the source is in exactly one live card (unless its card was deleted):
  its text, or the person's, if they edited that card;
- every item gone from the source whose card lives is reported gone, its card's bytes
  untouched by that import;
- the trigger table, the pile's rules and the rules file hold exactly the live rules.
"""
from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardmem.store.index.pile_view import holdings
from cardmem.store.rules import host_file, triggers
from cardmem.store.store import init
from cardmem.tools.importers import run

WORDS = ("amber basil cedar delta ember fjord garnet harbor indigo juniper kelp lagoon "
         "marble nectar onyx pepper quartz raven saffron tundra umber velvet willow xenon "
         "yarrow zephyr acorn bramble cobalt dune falcon glacier hazel iris jade kestrel "
         "lichen mesa nimbus orchid").split()
VERBS = ("Always", "Never", "Use", "Prefer", "Avoid", "Keep")
PROJECT = "acme"


@dataclass
class Item:
    ident: int
    text: str


@dataclass
class Section:
    heading: str
    items: list[Item] = field(default_factory=list)  # rules (two or more)
    prose: Item | None = None  # or one text


def render(sections: list[Section]) -> str:
    out = ["# Acme", ""]
    for s in sections:
        out += [f"## {s.heading}", ""]
        if s.prose is not None:
            out += [s.prose.text, ""]
        else:
            out += [f"- {i.text}" for i in s.items] + [""]
    return "\n".join(out)


class World:
    """The source, the store and what this test knows of both."""

    def __init__(self, tmp: Path) -> None:
        self.store, _ = init(tmp / "store")
        for k, v in (("user.name", "Tess Tester"), ("user.email", "tess@example.com")):
            subprocess.run(["git", "-C", str(self.store.root), "config", k, v], check=True)
        self.source = tmp / "acme" / "CLAUDE.md"
        self.source.parent.mkdir()
        self.rules_file = tmp / "claude" / "rules" / "cardmem.md"
        triggers.build(self.store)  # derived state that exists before the first import
        host_file.deliver(self.store, self.rules_file)
        self.serial = 0
        self.texts: list[str] = []  # every item's text so far
        self.sections: list[Section] = []
        self.card_of: dict[int, str] = {}  # identity -> card id
        # An item is reworded at most once: identity is its text, its key, or a rewording
        # (>= 85% alike, tools/importers/identity.py); an item whose heading and text have
        # both drifted past that since a person deleted its card is a new item to the
        # importer (a known bound, said in docs/cards.md), not a deleted one made again.
        self.reworded: set[int] = set()
        self.deleted: set[int] = set()  # identities whose card a person deleted
        self.edited: dict[int, str] = {}  # identity -> the body a person wrote

    def text(self, rnd: st.DataObject) -> Item:
        """A new item, unlike every other: two items a word apart would be one item
        reworded, to identity as to a person (hypothesis shrinks words towards sameness,
        so the words come from a seeded shuffle, drawn again until distinct)."""
        from rapidfuzz.fuzz import ratio

        self.serial += 1
        seed = rnd.draw(st.integers(0, 2**16))
        others = self.texts
        for attempt in range(50):
            words = random.Random(seed * 1009 + self.serial * 31 + attempt).sample(WORDS, 7)
            text = f"{rnd.draw(st.sampled_from(VERBS))} item{self.serial} {' '.join(words)}"
            if all(ratio(text.lower(), o.lower()) < 60 for o in others):
                break
        self.texts.append(text)
        return Item(self.serial, text)

    def items(self) -> dict[int, Item]:
        return {i.ident: i for s in self.sections
                for i in ([s.prose] if s.prose is not None else s.items)}

    def import_(self):
        before = {p: p.read_bytes() for p in (self.store.root / "projects").rglob("*.md")} \
            if (self.store.root / "projects").exists() else {}
        self.source.write_text(render(self.sections))
        report = run(self.store, "claude-md", self.source, project=PROJECT)
        assert not report.skipped, report.skipped
        self.check(report, before)
        return report

    def live(self) -> dict[str, object]:
        cards, problems = self.store.scan()
        assert not problems
        return {c.id: c for c in cards}

    def check(self, report, before: dict[Path, bytes]) -> None:
        live = self.live()
        items = self.items()
        by_body: dict[str, list[str]] = {}
        for c in live.values():
            by_body.setdefault(c.body.strip(), []).append(c.id)
        for ident, item in items.items():
            if ident in self.deleted:
                assert self.card_of[ident] not in live, f"deleted card {self.card_of[ident]} is back"
                assert item.text not in by_body, f"deleted item {ident} made again"
                continue
            if ident not in self.card_of:  # new: exactly one card made of it
                made = by_body.get(item.text, [])
                assert len(made) == 1, (item.text, made)
                self.card_of[ident] = made[0]
            cid = self.card_of[ident]
            assert cid in live, f"item {ident} lost its card {cid}"
            want = self.edited.get(ident, item.text)
            assert live[cid].body.strip() == want.strip(), (cid, live[cid].body, want)
        mine = {self.card_of[i] for i in items if i in self.card_of and i not in self.deleted}
        gone = {o.id for o in report.outcomes if o.action == "gone"}
        for ident, cid in self.card_of.items():
            if ident in items or ident in self.deleted:
                continue
            assert cid in gone, f"removed item {ident} not reported gone ({cid})"
            path = self.store.path(cid)
            assert path.read_bytes() == before[path], f"{cid} changed by the import"
        sources = [str(c.meta.get("source")) for c in live.values() if c.meta.get("source")]
        assert len(sources) == len(set(sources)), "two cards claim one item"
        assert mine <= set(live)
        # derived state: the rules as they are on disk now
        rules = {cid for cid, c in live.items()
                 if c.type == "feedback" and (c.status or "active") == "active"}
        table = triggers.load(str(self.store.root)) if report.commit else None
        table = table or triggers.ensure(str(self.store.root))[0]
        assert {r["id"] for r in table["rules"]} == rules
        assert {c.id for c in holdings(self.store, None).rules} == rules
        if report.commit:  # the rules file follows commits (the next session start, the rest)
            text = self.rules_file.read_text()
            assert {cid for cid in live if f"(`{cid}`)" in text} == rules


def edit_source(w: World, rnd: st.DataObject) -> None:
    rules = [s for s in w.sections if s.prose is None]
    for _ in range(rnd.draw(st.integers(1, 4))):
        op = rnd.draw(st.sampled_from(["add", "remove", "reorder", "move", "reword",
                                       "rename", "prose"]))
        s = rnd.draw(st.sampled_from(rules))
        if op == "add":
            s.items.insert(rnd.draw(st.integers(0, len(s.items))), w.text(rnd))
        elif op == "remove" and len(s.items) > 2:
            s.items.pop(rnd.draw(st.integers(0, len(s.items) - 1)))
        elif op == "reorder":
            s.items[:] = rnd.draw(st.permutations(s.items))
        elif op == "move" and len(s.items) > 2 and len(rules) > 1:
            to = rnd.draw(st.sampled_from([r for r in rules if r is not s]))
            to.items.append(s.items.pop(rnd.draw(st.integers(0, len(s.items) - 1))))
        elif op == "reword" and (fresh := [i for i in s.items if i.ident not in w.reworded]):
            i = rnd.draw(st.sampled_from(fresh))
            i.text += " " + rnd.draw(st.sampled_from(["carefully", "today", "as agreed"]))
            w.reworded.add(i.ident)
        elif op in ("rename", "prose"):
            prose = [p for p in w.sections if p.prose is not None]
            if prose:
                p = rnd.draw(st.sampled_from(prose))
                if op == "rename":
                    p.heading += " " + rnd.draw(st.sampled_from(WORDS)).title()
                elif p.prose.ident not in w.reworded:
                    p.prose.text += " It was " + rnd.draw(st.sampled_from(WORDS)) + "."
                    w.reworded.add(p.prose.ident)


def edit_store(w: World, rnd: st.DataObject) -> None:
    live = w.live()
    idents = sorted(i for i, cid in w.card_of.items() if cid in live)
    if not idents:
        return
    for ident in rnd.draw(st.lists(st.sampled_from(idents), max_size=2, unique=True)):
        cid = w.card_of[ident]
        how = rnd.draw(st.sampled_from(["delete", "delete-uncommitted", "edit"]))
        if how == "edit":
            body = live[cid].body.strip() + f"\n\nA note of Tess on {cid.rsplit('/', 1)[-1]}."
            w.store.update_text(cid, lambda t, b=body: t[:t.index("\n---\n") + 5] + "\n" + b + "\n",
                                f"edit: {cid}")
            w.edited[ident] = body
            continue
        w.store.path(cid).unlink()
        if how == "delete":
            subprocess.run(["git", "-C", str(w.store.root), "commit", "-qam", f"no {cid}"],
                           check=True)
        w.deleted.add(ident)
        w.edited.pop(ident, None)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(rnd=st.data())
def test_reimports_keep_every_no_and_every_item(rnd: st.DataObject) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="cardmem-import-prop-"))
    try:
        w = World(tmp)
        for n in range(rnd.draw(st.integers(1, 3))):
            w.sections.append(Section(f"Rules {WORDS[n]}",
                                      [w.text(rnd) for _ in range(rnd.draw(st.integers(2, 4)))]))
        for n in range(rnd.draw(st.integers(0, 2))):
            w.sections.insert(rnd.draw(st.integers(0, len(w.sections))),
                              Section(f"Notes on {WORDS[-1 - n]}", prose=w.text(rnd)))
        w.import_()
        for _ in range(rnd.draw(st.integers(1, 3))):
            edit_store(w, rnd)
            edit_source(w, rnd)
            w.import_()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
