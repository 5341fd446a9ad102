"""Redaction on 2 MB of realistic transcript, against the code before this change.

    python bench/bench_redact.py [--base 67aa38a] [--runs 7] [--detect-secrets]

Builds ~2,000,000 characters of a Claude Code transcript (JSONL: prose, code, git
logs, pip/npm output, request logs with UUIDs, docker digests, base64 images), with a
secret of the test corpus (tests/secrets_corpus.py) planted every ~40 KB (as in
tests/tools/secrets/test_redact.py), then every ~13 KB (a dense worst case). Times
`redact` of this branch and of `git show <base>:tools/secrets/redact.py`, interleaved, on the
JSONL as on disk and on the turns' plain text, and counts the planted secrets each
leaves. With --detect-secrets (installed by hand, only to measure), also times
detect-secrets' default detectors on the same text and counts what they find in our
redacted output of the corpus (a secret we missed) and in the non-secrets.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from secrets_corpus import FORMATS, cases, leaked, non_secrets  # noqa: E402

from cardmem.tools.secrets import redact as new  # noqa: E402


def old_module(base: str) -> types.ModuleType:
    src = subprocess.run(["git", "-C", str(HERE.parent), "show", f"{base}:tools/secrets/redact.py"],
                         capture_output=True, text=True, check=True).stdout
    mod = types.ModuleType("redact_before")
    sys.modules[mod.__name__] = mod  # dataclasses look their module up
    exec(compile(src, "redact_before.py", "exec"), mod.__dict__)
    return mod


def transcript(size: int = 2_000_000, every: int = 40_000) -> tuple[str, str, list[str]]:
    """(JSONL, the turns' plain text, planted secrets): one about every `every` chars."""
    r = random.Random(11)
    fmts = [f for f in FORMATS if "\n" not in f.value]
    benign = non_secrets()
    prose = [
        "The token bucket refills at 10 req/s; the password reset flow sends one email.",
        "I looked at the failing test: the fixture opens the store twice, so the lock is held.",
        "Let me check the auth middleware first, then the session cookie settings.",
        "Done. I also bumped the cache key so CI does not restore the stale node_modules.",
        "```python\ndef handler(event, context):\n    return {'statusCode': 200, 'body': json.dumps(event)}\n```",
        "```bash\n$ make test -j2 && git push origin HEAD\n```",
        "max_tokens = 1024  # keep the api key rotation job idempotent",
        "SELECT id, email FROM users WHERE created_at > now() - interval '1 day';",
    ]
    lines, plain, planted, n = [], [], [], 0
    while n < size:
        parts = [r.choice(prose) for _ in range(3)] + [r.choice(benign) for _ in range(3)]
        if r.random() < 760 / every:  # a line is ~760 characters
            f = r.choice(fmts)
            text = r.choice(f.renderings)
            planted.append(f.value)
            parts.insert(r.randrange(len(parts)), text)
        text = "\n".join(parts)
        role = r.choice(["user", "assistant"])
        line = json.dumps({"type": role, "message": {"role": role,
                           "content": [{"type": "text", "text": text}]}})
        lines.append(line)
        plain.append(text)
        n += len(line) + 1
    jsonl = "\n".join(lines)[:size]
    return jsonl, "\n\n".join(plain)[:size], planted


def timed(fn, text: str) -> tuple[float, float, str]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(text)
    return time.perf_counter() - t0, time.process_time() - c0, out


def bench(fns: dict[str, object], text: str, runs: int) -> dict[str, tuple[float, float, str]]:
    walls: dict[str, list[float]] = {k: [] for k in fns}
    cpus: dict[str, list[float]] = {k: [] for k in fns}
    outs: dict[str, str] = {}
    for _ in range(runs):
        for name, fn in fns.items():  # interleaved: load moves both alike
            w, c, outs[name] = timed(fn, text)
            walls[name].append(w)
            cpus[name].append(c)
    return {k: (statistics.median(walls[k]), statistics.median(cpus[k]), outs[k]) for k in fns}


def detect_secrets_fn():
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    def scan(text: str) -> list[str]:
        with default_settings():
            return [s.secret_value for line in text.splitlines() for s in scan_line(line)
                    if s.secret_value]
    return scan


def main() -> None:
    ap = argparse.ArgumentParser()
    # main before the redaction change landed (its merge is db8189e)
    ap.add_argument("--base", default="67aa38a")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--detect-secrets", action="store_true")
    args = ap.parse_args()
    old = old_module(args.base)
    fns = {"before": old.redact, "after": new.redact}
    print(f"median of {args.runs} runs, interleaved")
    print("| text | code | wall | CPU | planted secrets left |\n|---|---|---|---|---|")
    for every in (40_000, 13_000):
        jsonl, plain, planted = transcript(every=every)
        for label, text in ((f"JSONL, {len(planted)} secrets", jsonl), (f"plain, {len(planted)} secrets", plain)):
            res = bench(fns, text, args.runs)
            whole = [s for s in planted if s in text]
            for name, (wall, cpu, out) in res.items():
                left = sum(1 for s in whole if leaked(s, out))
                print(f"| {label} | {name} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms | {left} of {len(whole)} |")
            print(f"| {label} | after / before (CPU) | | {res['after'][1] / res['before'][1]:.2f}x | |")
    corpus = cases()
    for name, fn in fns.items():
        left = sum(1 for f, _, t in corpus if leaked(f.value, fn(t)))
        fp = sum(1 for t in non_secrets() if fn(t) != t)
        print(f"corpus, {name}: {left} of {len(corpus)} renderings leak; {fp} non-secrets changed")
    if args.detect_secrets:
        scan = detect_secrets_fn()
        wall, cpu, _ = timed(scan, transcript()[1])
        print(f"detect-secrets (default detectors) on the plain text: {wall * 1000:.0f} ms wall, "
              f"{cpu * 1000:.0f} ms CPU")
        found = sum(1 for f, _, t in corpus if any(v in f.value or f.value in v for v in scan(t)))
        # what it finds in our output that is part of a planted secret: a miss of ours
        missed = [v for f, _, t in corpus for v in scan(new.redact(t)) if len(v) >= 8 and v in f.value]
        fps = sum(1 for t in non_secrets() if scan(t))
        print(f"detect-secrets finds {found} of {len(corpus)} corpus renderings; "
              f"in our redacted output it finds {len(missed)} value(s): {sorted(set(missed))[:10]}; "
              f"it flags {fps} of {len(non_secrets())} non-secrets")


if __name__ == "__main__":
    main()
