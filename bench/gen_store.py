"""Generate a realistic synthetic cardmem store (1k, 10k, 100k cards) for benchmarks.

Bodies are paragraphs of real agent-instruction files, read at run time from the
agents-md corpus (../shared/corpus/agents-md, or $CARDMEM_CORPUS); titles, aliases,
tags, projects and frontmatter are generated around them, deterministically from --seed.

    python bench/gen_store.py /tmp/cardmem-bench/10k --cards 10000
"""
from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
from pathlib import Path

CORPUS = Path(os.environ.get("CARDMEM_CORPUS", Path(__file__).resolve().parents[2]
                             / "shared" / "corpus" / "agents-md"))
TYPES = [("project", 45), ("reference", 15), ("entity", 10), ("feedback", 10),
         ("signal", 10), ("person", 9), ("user", 1)]
FOLDERS = {"reference": "reference", "entity": "entities", "feedback": "feedback",
           "signal": "signals", "person": "people", "user": "user"}
FIRST = "Mara Priya Tomas Jun Sofia Kwame Lena Omar Ines Yuki Ravi Anya Diego Noor Felix".split()
LAST = "Okonkwo Raman Lindqvist Park Marchetti Asante Weber Haddad Silva Tanaka Iyer".split()
STOP = set("the a an and or of to in for on with is are be by this that it as at from".split())


def load_corpus() -> tuple[list[str], list[str], list[str]]:
    """(paragraphs, titles, words) of the corpus; its own frontmatter is dropped."""
    paras, titles, words = [], [], set()
    for path in sorted(CORPUS.glob("*--*.md")):
        text = path.read_text(encoding="utf-8")
        if text.startswith("---\n"):
            head, _, text = text[4:].partition("\n---\n")
            m = re.search(r"^title:\s*(.+)$", head, re.M)
            if m:
                titles.append(m.group(1).strip().strip("\"'"))
        for block in re.split(r"\n\s*\n", text):
            block = block.strip()
            if len(block) > 40 and not block.startswith("#"):
                paras.append(block)
        words.update(w.lower() for w in re.findall(r"[A-Za-z][a-z]{3,14}", text))
    if not paras:
        raise SystemExit(f"no corpus at {CORPUS}")
    return paras, titles, sorted(words - STOP)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "card"


def yaml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{i}"' if re.search(r"[:#,\[\]{}@]", i) else i for i in items) + "]"


def make_card(rng: random.Random, n: int, paras: list[str], titles: list[str],
              words: list[str], projects: list[str], tags: list[str]) -> tuple[str, str]:
    """(relative path, text) of card number n."""
    ctype = rng.choices([t for t, _ in TYPES], [w for _, w in TYPES])[0]
    w = lambda k: " ".join(rng.sample(words, k))  # noqa: E731
    project = None
    if ctype == "person":
        first, last = rng.choice(FIRST), rng.choice(LAST)
        title = f"{first} {last} {w(1).title()}"
        aliases = [f"@{first.lower()}{n}", f"{first.lower()}.{last.lower()}{n}@example.com",
                   first]
    else:
        title = f"{rng.choice(titles)}: {w(2)}"
        aliases = [w(2) for _ in range(rng.choice([0, 0, 1, 1, 2, 3]))]
    if ctype == "project":
        project = rng.choice(projects)
        rel = f"projects/{project}/{slug(title)}-{n}.md"
    else:
        rel = f"{FOLDERS[ctype]}/{slug(title)}-{n}.md"
    body_paras = rng.sample(paras, rng.randint(1, 5))
    desc = re.sub(r'[\s"\\]+', " ", body_paras[0]).split(". ")[0][:150].strip()
    title = re.sub(r'["\\]', "", title)
    lines = ["---", f'title: "{title}"' if re.search(r"[:#\[\]{}&*!|>'%@`,-]", title)
             else f"title: {title}",
             f"type: {ctype}", f'description: "{desc}"']
    if aliases:
        lines.append(f"aliases: {yaml_list(aliases)}")
    lines.append(f"tags: {yaml_list(rng.sample(tags, rng.randint(1, 4)))}")
    if project:
        lines.append(f"project: {project}")
    r = rng.random()
    if r < 0.05:
        lines.append("status: superseded")
    elif r < 0.07:
        lines.append("status: archived")
    if rng.random() < 0.1:
        lines.append(f"owner_team: {w(1)}")
    lines.append(f"created: 2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}")
    lines.append("---")
    body = "\n\n".join(body_paras)
    if rng.random() < 0.3:
        body += "\n\n## History\n" + "".join(
            f"- 2026-11-{rng.randint(1, 28):02d} · session {rng.getrandbits(28):07x} · "
            f"{rng.choice(['Decision', 'Failed', 'Worked', 'Rule'])}: {w(6)}\n"
            for _ in range(rng.randint(1, 4)))
    return rel, "\n".join(lines) + "\n" + body.rstrip() + "\n"


def generate(root: Path, count: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    paras, titles, words = load_corpus()
    projects = sorted({slug(rng.choice(words)) for _ in range(60)})[:40]
    tags = rng.sample(words, 300)
    root.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        rel, text = make_card(rng, n, paras, titles, words, projects, tags)
        if n % 997 == 500:  # a few broken cards, as real stores have
            text = "---\ntitle: [unclosed\n---\nbroken frontmatter\n"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".gitignore").write_text(".cardmem/\n")
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q", str(root)], check=True)


def commit_store(root: Path) -> None:
    """Commit the generated cards once, as a real store has them (a search's freshness
    check asks git what changed since; see store/index/freshness.py)."""
    if subprocess.run(["git", "-C", str(root), "rev-parse", "-q", "--verify", "HEAD"],
                      capture_output=True).returncode == 0:
        return
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "bench cards"], check=True,
                   env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--cards", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    generate(args.root, args.cards, args.seed)
    print(f"{args.cards} cards in {args.root}")


if __name__ == "__main__":
    main()


def top_up_rules(root: Path, rules: int) -> int:
    """Add rules of ordinary length (~300 characters) until `rules` are in force, and
    commit them; returns how many were added."""
    have = sum(1 for f in root.glob("feedback/*.md")  # rules in force, not superseded ones
               if "\nstatus: " not in f.read_text() or "\nstatus: active" in f.read_text())
    add = max(0, rules - have)
    for i in range(add):
        (root / "feedback" / f"extra-rule-{have}-{i:04d}.md").write_text(
            f"---\ntitle: Extra rule {i}\ntype: feedback\n---\n"
            + f"Before touching module {i}, run its tests with -x and read the failure. " * 4
            + "\n")
    if add:
        env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
               "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
        subprocess.run(["git", "-C", str(root), "commit", "-qm", "more rules"], check=True,
                       env=env)
    return add
