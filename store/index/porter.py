"""The stems SQLite FTS5's `porter` tokenizer gives, computed in Python.

Speed trick: a query's ASCII words stem here rather than through FTS5 scratch tables,
cheaper for a one-shot search (its import included) and far cheaper per query in a
long-lived process (bench/bench_tricks.py; bench/RESULTS.md, "Speed tricks, each against
its plain alternative").

Search stems the ASCII words of a query to match the index (tokenize='porter unicode61
remove_diacritics 2'); asking FTS5 costs three SQL statements per new query, this costs
a few microseconds per word. It mirrors fts5PorterCb and its helpers in SQLite's
ext/fts5/fts5_tokenize.c (public domain), quirks included, rather than Porter's paper:

- tokens shorter than 3 or longer than 64 bytes pass through unchanged;
- a suffix matches only if something is left before it (`len(word) > len(suffix)`), and
  when it does not, the next suffix of the same step is tried; when a suffix matches but
  its condition fails, the step ends;
- step 1a: "-ies" -> "-i" needs a letter before it ("ies" -> "ie"), "-sses" -> "-ss",
  other "-es" -> "-e";
- step 1b's *v* counts a "y" anywhere but first as a vowel; a double letter is any
  repeated non-vowel but l, s, z, digits and "y" included ("a11ing" -> "a1", "yyed" -> "y");
- m and *o use Porter's y rule (a "y" after a consonant is a vowel, a leading "y" is
  not); digits are consonants.

Only for lowercase ASCII letters and digits (what unicode61 yields from ASCII text):
FTS5 measures length in UTF-8 bytes, and the tables below know ASCII only.
"""
from __future__ import annotations

import re

MIN_LEN, MAX_LEN = 3, 64  # FTS5 passes tokens outside these byte lengths through

# Each character as 'v' (a, e, i, o, u), 'y' (decided by what precedes it) or 'c'.
_CV = {i: "c" for i in range(128)}
_CV.update({ord(v): "v" for v in "aeiou"})
_CV[ord("y")] = "y"
_HAS_VOWEL = re.compile(r"[aeiou]|.y").search  # step 1's *v*: "y" is a vowel but first

# Steps 2, 3 and 4: (suffix, replacement) in the order FTS5 tries them. Steps 2 and 3
# replace when m(stem) > 0, step 4 removes when m(stem) > 1 ("ion" also needs s or t).
_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
          ("izer", "ize"), ("logi", "log"), ("bli", "ble"), ("alli", "al"),
          ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"),
          ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
          ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"),
          ("biliti", "ble"))
_STEP3 = (("ical", "ic"), ("ness", ""), ("icate", "ic"), ("iciti", "ic"), ("ful", ""),
          ("ative", ""), ("alize", "al"))
_STEP4 = tuple((s, "") for s in ("al", "ance", "ence", "er", "ic", "able", "ible", "ant",
                                  "ement", "ment", "ent", "ion", "ou", "ism", "ate", "iti",
                                  "ous", "ive", "ize"))

Rule = tuple[str, int, str]  # suffix, its length, replacement


def _by_ending(rules: tuple[tuple[str, str], ...]) -> dict[str, tuple[Rule, ...]]:
    """The rules by their suffix's last two letters, in order.

    FTS5 switches on the word's last-but-one letter; no suffix is shorter than two
    letters, so only the rules under the word's own last two letters can match."""
    out: dict[str, tuple[Rule, ...]] = {}
    for suffix, repl in rules:
        out[suffix[-2:]] = out.get(suffix[-2:], ()) + ((suffix, len(suffix), repl),)
    return out


_STEP2_BY, _STEP3_BY, _STEP4_BY = _by_ending(_STEP2), _by_ending(_STEP3), _by_ending(_STEP4)


def _cv(stem: str) -> str:
    """The stem as consonants 'c' and vowels 'v' (a "y" after a consonant is a vowel)."""
    cv = stem.translate(_CV)
    if "y" in cv:
        if cv[0] == "y":  # a leading "y" is a consonant
            cv = "c" + cv[1:]
        while "y" in cv:  # each pass settles at least the first "y" left
            cv = cv.replace("cy", "cv").replace("vy", "vc")
    return cv


def _m(stem: str) -> int:
    """Porter's m, the number of vowel-consonant sequences in the stem."""
    return _cv(stem).count("vc")


def _m_ostar(stem: str) -> tuple[int, bool]:
    """Porter's m, and *o: the stem ends consonant-vowel-consonant, the last not w, x or y."""
    cv = _cv(stem)
    return cv.count("vc"), cv.endswith("cvc") and stem[-1] not in "wxy"


def _step(word: str, rules: tuple[Rule, ...], min_m: int) -> str:
    """Steps 2 to 4: the first suffix with a non-empty stem decides, on the stem's m."""
    for suffix, n, repl in rules:
        if len(word) > n and word.endswith(suffix):
            stem = word[:-n]
            if _cv(stem).count("vc") >= min_m and (suffix != "ion" or stem[-1] in "st"):
                return stem + repl
            return word
    return word


def stem(word: str) -> str:
    """The stem FTS5's porter tokenizer gives for `word`, a lowercase ASCII token."""
    n = len(word)
    if n < MIN_LEN or n > MAX_LEN:
        return word
    w = word
    # Step 1a: plurals.
    if w[-1] == "s":
        if w[-2] == "e":
            w = w[:-2] if (n > 4 and w[-4:-2] == "ss") or (n > 3 and w[-3] == "i") else w[:-1]
        elif w[-2] != "s":
            w = w[:-1]
    # Step 1b: -eed, -ed, -ing (w has 2 letters at least); after -ed/-ing, tidy the end.
    cut = 0
    if w[-1] == "d" and w[-2] == "e":
        if len(w) > 3 and w[-3] == "e":
            if _m(w[:-3]):
                w = w[:-1]
        elif len(w) > 2:
            cut = 2
    elif w[-1] == "g" and len(w) > 3 and w.endswith("ing"):
        cut = 3
    if cut and _HAS_VOWEL(w, 0, len(w) - cut):
        w = w[:-cut]
        if len(w) > 2 and w[-2:] in ("at", "bl", "iz"):
            w += "e"
        elif w[-1] not in "aeiouslz" and w[-1] == w[-2]:  # 1 letter left: a vowel
            w = w[:-1]
        elif _m_ostar(w) == (1, True):
            w += "e"
    # Step 1c: y -> i when the stem has a vowel.
    if w[-1] == "y" and _HAS_VOWEL(w, 0, len(w) - 1):
        w = w[:-1] + "i"
    # Steps 2, 3, 4: double suffixes to single ones; -ic-, -full, -ness etc.; -ant, -ence etc.
    # (a 1-letter w, as from "aing", has no ending in the tables: no rule fits it)
    rules = _STEP2_BY.get(w[-2:])
    if rules:
        w = _step(w, rules, 1)
    rules = _STEP3_BY.get(w[-2:])
    if rules:
        w = _step(w, rules, 1)
    rules = _STEP4_BY.get(w[-2:])
    if rules:
        w = _step(w, rules, 2)
    # Step 5a: drop a final e when m > 1, or m = 1 and not *o.
    if w[-1] == "e":
        m, ostar = _m_ostar(w[:-1])
        if m > 1 or (m == 1 and not ostar):
            w = w[:-1]
    # Step 5b: -ll -> -l when m > 1.
    if w[-1] == "l" and w.endswith("ll") and _m(w[:-1]) > 1:
        w = w[:-1]
    return w
