"""A shell command line as the simple commands it runs (for rules' `applies_to`).

    simple_commands("touch X && sudo env A=1 git push --force origin main")
    -> [["touch", "X"], ["git", "push", "--force", "origin", "main"]]

A rule about `git push --force*` must see the push however the line wraps it: after
`&&`, `||`, `;`, `|`, `&` or a newline; inside `$(…)`, backticks, `<(…)`, `( … )` or
`{ …; }`; behind `VAR=1`, `env`, `sudo`, `nohup`, `time`, `nice`, `timeout`, `xargs`,
`command`, `exec`; inside `bash -c '…'` or `eval`. Words are unquoted as the shell
would (single and double quotes, `$'…'`, backslash escapes); redirections and their
targets are dropped, and here-document bodies are skipped (a commit message that
mentions `git push --force` is not a push). Expansions are not performed: `$HOME`
stays as written. No shell is started and nothing raises: text the shell would reject
(an open quote) is read as far as it goes.
"""
from __future__ import annotations

SEPARATORS = {"&&", "||", ";", "|", "&", "|&", ";;", "\n", "(", ")", "{", "}", "!"}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh"}
# Wrappers that run the rest of their words as a command: name -> options taking a value.
WRAPPERS: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R"},
    "doas": {"-u", "-C"}, "env": {"-u", "-C", "-S"}, "nohup": set(), "time": set(),
    "command": set(), "builtin": set(), "exec": {"-a"}, "nice": {"-n"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"}, "stdbuf": {"-i", "-o", "-e"},
    "xargs": {"-I", "-n", "-P", "-L", "-d", "-s", "-E", "-a"},
}
# Reserved words that lead into the command that follows them, and those that end a
# construct or begin a header that runs nothing itself (`for x in a b`).
LEADING = {"if", "then", "else", "elif", "do", "while", "until", "!"}
NOT_COMMANDS = {"fi", "done", "esac", "for", "case", "select", "function", "in"}
MAX_DEPTH = 8  # nested substitutions / `bash -c` levels followed


class _Reader:
    """One pass over a line: words and separators, substitutions read recursively."""

    def __init__(self, text: str, depth: int) -> None:
        self.s, self.i, self.depth = text, 0, depth
        self.nested: list[list[str]] = []  # simple commands found inside substitutions
        self.heredocs: list[tuple[str, bool]] = []  # (delimiter, strip tabs) pending

    def _sub(self, inner: str) -> None:
        if self.depth < MAX_DEPTH:
            self.nested += _split(inner, self.depth + 1)

    def _until_paren(self) -> str:
        """The text up to the `)` closing a `$(` / `<(` just read; i moves past it."""
        s, start, level = self.s, self.i, 1
        while self.i < len(s):
            c = s[self.i]
            if c == "\\":
                self.i += 2
                continue
            if c == "'":
                end = s.find("'", self.i + 1)
                self.i = len(s) if end < 0 else end + 1
                continue
            if c == '"':
                self._double()  # skips the quoted part (its substitutions are read)
                continue
            if c == "(":
                level += 1
            elif c == ")":
                level -= 1
                if level == 0:
                    self.i += 1
                    return s[start:self.i - 1]
            self.i += 1
        return s[start:]

    def _backtick(self) -> str:
        s, out = self.s, []
        while self.i < len(s) and s[self.i] != "`":
            if s[self.i] == "\\" and self.i + 1 < len(s):
                self.i += 1
            out.append(s[self.i])
            self.i += 1
        self.i += 1
        return "".join(out)

    def _double(self) -> str:
        """A double-quoted string from its opening quote; its value."""
        s, out = self.s, []
        self.i += 1
        while self.i < len(s) and s[self.i] != '"':
            c = s[self.i]
            if c == "\\" and self.i + 1 < len(s):
                nxt = s[self.i + 1]
                if nxt in '$`"\\':
                    out.append(nxt)
                elif nxt != "\n":
                    out.append(c + nxt)
                self.i += 2
            elif c == "$" and s.startswith("$(", self.i):
                self.i += 2
                inner = self._until_paren()
                self._sub(inner)
                out.append(f"$({inner})")
            elif c == "`":
                self.i += 1
                inner = self._backtick()
                self._sub(inner)
                out.append(f"`{inner}`")
            else:
                out.append(c)
                self.i += 1
        self.i += 1
        return "".join(out)

    def _ansi_c(self) -> str:
        s, out = self.s, []
        self.i += 2  # past $'
        escapes = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"', "a": "\a", "e": "\x1b"}
        while self.i < len(s) and s[self.i] != "'":
            if s[self.i] == "\\" and self.i + 1 < len(s):
                out.append(escapes.get(s[self.i + 1], s[self.i + 1]))
                self.i += 2
            else:
                out.append(s[self.i])
                self.i += 1
        self.i += 1
        return "".join(out)

    def _skip_heredocs(self) -> None:
        """At a newline with here-documents pending: skip their bodies."""
        s = self.s
        for delim, strip in self.heredocs:
            while self.i < len(s):
                end = s.find("\n", self.i)
                line = s[self.i:len(s) if end < 0 else end]
                self.i = len(s) if end < 0 else end + 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break
        self.heredocs = []

    def tokens(self) -> list[tuple[str, bool]]:
        """(text, is_separator) in order; redirections are already dropped."""
        s, out = self.s, []
        word: list[str] = []
        started = False
        drop_next = False  # the next word is a redirection's target
        heredoc_next = False

        def end_word() -> None:
            nonlocal word, started, drop_next, heredoc_next
            if started:
                w = "".join(word)
                if heredoc_next:
                    self.heredocs.append((w, heredoc_next == "strip"))
                elif not drop_next:
                    out.append((w, False))
                drop_next = heredoc_next = False
            word, started = [], False

        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r":
                end_word()
                self.i += 1
            elif c == "\\":
                if self.i + 1 < len(s) and s[self.i + 1] != "\n":
                    word.append(s[self.i + 1])
                    started = True
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                end = len(s) if end < 0 else end
                word.append(s[self.i + 1:end])
                started, self.i = True, end + 1
            elif c == '"':
                word.append(self._double())
                started = True
            elif c == "$" and s.startswith("$'", self.i):
                word.append(self._ansi_c())
                started = True
            elif c == "$" and s.startswith("$(", self.i):
                self.i += 2
                inner = self._until_paren()
                self._sub(inner)
                word.append(f"$({inner})")
                started = True
            elif c == "`":
                self.i += 1
                inner = self._backtick()
                self._sub(inner)
                word.append(f"`{inner}`")
                started = True
            elif c in "<>" and s.startswith("(", self.i + 1):  # process substitution
                self.i += 2
                self._sub(self._until_paren())
                end_word()
            elif c in "<>":
                if started and "".join(word).isdigit():  # 2>file: the fd is no word
                    word, started = [], False
                end_word()
                op = c
                self.i += 1
                while self.i < len(s) and s[self.i] in "<>&|-" and len(op) < 3:
                    op += s[self.i]
                    self.i += 1
                if op.startswith("<<") and not op.startswith("<<<"):
                    heredoc_next = "strip" if op.endswith("-") else "plain"
                elif op.endswith("&") and self.i < len(s) and (s[self.i].isdigit() or s[self.i] == "-"):
                    self.i += 1  # 2>&1, >&-: no target word
                    continue
                else:
                    drop_next = True
            elif c == "#" and not started:
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            elif c == "\n":
                end_word()
                out.append(("\n", True))
                self.i += 1
                if self.heredocs:
                    self._skip_heredocs()
            elif c in ";&|()":
                end_word()
                op = s[self.i:self.i + 2]
                if op in ("&&", "||", ";;", "|&"):
                    self.i += 2
                else:
                    op = c
                    self.i += 1
                out.append((op, True))
            elif c in "{}!" and not started and (self.i + 1 >= len(s) or s[self.i + 1] in " \t\n;"):
                out.append((c, True))  # a group or negation, not part of a word
                self.i += 1
            else:
                word.append(c)
                started = True
                self.i += 1
        end_word()
        return out


def _unwrap(words: list[str], depth: int) -> list[list[str]]:
    """The command a simple command runs: assignments and wrappers taken off; `bash -c`
    and `eval` strings split in turn."""
    i = 0
    while i < len(words):
        w = words[i]
        name = w.rsplit("/", 1)[-1]
        if w in LEADING:
            i += 1
            continue
        if w in NOT_COMMANDS:
            return []
        if "=" in w and w.split("=", 1)[0].replace("_", "a").isalnum() and not w[0].isdigit():
            i += 1  # VAR=value before the command
            continue
        if name in WRAPPERS:
            takes = WRAPPERS[name]
            i += 1
            while i < len(words) and words[i].startswith("-") and words[i] != "-":
                i += 2 if words[i] in takes else 1
            if name == "timeout" and i < len(words):
                i += 1  # the duration
            continue
        break
    rest = words[i:]
    if not rest:
        return []
    name = rest[0].rsplit("/", 1)[-1]
    if depth < MAX_DEPTH and name in SHELLS and "-c" in rest[1:]:
        at = rest.index("-c", 1)
        if at + 1 < len(rest):
            return [rest] + _split(rest[at + 1], depth + 1)
    if depth < MAX_DEPTH and name == "eval" and len(rest) > 1:
        return [rest] + _split(" ".join(rest[1:]), depth + 1)
    return [rest]


def _split(text: str, depth: int) -> list[list[str]]:
    reader = _Reader(text, depth)
    out: list[list[str]] = []
    current: list[str] = []
    for tok, sep in reader.tokens():
        if sep:
            if current:
                out += _unwrap(current, depth)
            current = []
        else:
            current.append(tok)
    if current:
        out += _unwrap(current, depth)
    return out + reader.nested


def simple_commands(line: str) -> list[list[str]]:
    """Every simple command of a shell line, as its words (outer commands first, then
    those found inside substitutions)."""
    if not isinstance(line, str) or not line.strip():
        return []
    return _split(line, 0)
