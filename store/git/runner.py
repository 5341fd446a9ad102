"""git, run as a subprocess: cheaper to start than GitPython is to import
(bench/RESULTS.md, "Figures from comments").

Everything cardmem asks of git goes through `run` (stdout, or one error line) or `call`
(the whole CompletedProcess, for callers that read the exit code), so errors read the
same everywhere, and every path is taken literally (LITERAL).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import head_file
from .spawn import LITERAL
from ..errors import CardmemError

AGENT_NAME = "cardmem-agent"
AGENT_EMAIL = "agent@cardmem.invalid"
# Used for human writes only when git knows no identity (a fresh machine, CI).
FALLBACK_NAME, FALLBACK_EMAIL = "cardmem", "cardmem@localhost"


# Paths passed to git are taken literally (the reason is in spawn.py, LITERAL's home).


def run(root: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None,
        check: bool = True) -> str:
    """Run `git -C root args…` and return stdout; a failure is one CardmemError line."""
    proc = call(root, list(args), input, env)
    if check and proc.returncode != 0:
        raise error(args[0], proc)
    return proc.stdout


_LOCK_EXISTS = re.compile(r"Unable to create '([^']+\.lock)': File exists")


def lock_file_error(path: str) -> CardmemError:
    """A git lock file in the way: say what to do, and never delete it for the user."""
    return CardmemError(path, "exists: a git process is running or was killed; "
                              "if none is running, remove the file")


def error(cmd: str, proc: subprocess.CompletedProcess) -> CardmemError:
    msg = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}")
    if m := _LOCK_EXISTS.search(msg):
        return lock_file_error(m.group(1))
    # git's "fatal:" line says the most; hints and advice come before or after it.
    lines = [ln for ln in msg.splitlines() if ln.strip()]
    first = next((ln for ln in lines if ln.startswith(("fatal: ", "error: "))), lines[0] if lines else msg)
    return CardmemError(f"git {cmd}", first.removeprefix("fatal: ").removeprefix("error: "))


def commit_locks(root: Path) -> list[Path]:
    """The lock files a commit takes (index, HEAD, the branch's ref); any one of them
    left by a killed git stops every write."""
    dot = Path(head_file.dot_git(root))
    locks = [dot / "index.lock", dot / "HEAD.lock"]
    ref = head_file.read_head(str(root))
    if ref and ref.startswith("ref: refs/"):
        locks.append(dot / (ref[5:] + ".lock"))
    return locks


def head(root: Path) -> str | None:
    """The commit HEAD points at, or None in a repository with no commits."""
    out = run(root, "rev-parse", "--verify", "-q", "HEAD", check=False).strip()
    return out or None


def branch(root: Path) -> str | None:
    """The checked-out branch, or None when HEAD is detached."""
    out = run(root, "symbolic-ref", "-q", "--short", "HEAD", check=False).strip()
    return out or None


def detached(root: Path) -> bool:
    """Whether HEAD is detached (read from .git/HEAD: a write needs no git call for it)."""
    ref = head_file.read_head(str(root))
    if ref is not None:
        return not ref.startswith("ref: ")
    # a worktree's .git is a file
    return head(root) is not None and branch(root) is None


def head_fast(root: Path) -> str | None:
    """HEAD's commit right after a commit: read from the ref files, else rev-parse."""
    return head_file.head(str(root)) or head(root)


AGENT_ENV = {"GIT_AUTHOR_NAME": AGENT_NAME, "GIT_AUTHOR_EMAIL": AGENT_EMAIL,
             "GIT_COMMITTER_NAME": AGENT_NAME, "GIT_COMMITTER_EMAIL": AGENT_EMAIL}


def commit_paths(root: Path, paths: list[str], message: str, *,
                 agent: bool) -> subprocess.CompletedProcess:
    """`git commit --only` of paths; a non-zero returncode if git made no commit.

    A person's write uses their git identity; only when git has none configured
    (useConfigOnly makes that an error rather than root@hostname) is it retried with
    cardmem's fallback, so the common case needs no `git config` call first.
    """
    args = ["commit", "-q", "--no-verify", "--only", "-F", "-", "--", *paths]
    if agent:
        proc = call(root, args, message, AGENT_ENV)
    else:
        proc = call(root, ["-c", "user.useConfigOnly=true", *args], message, None)
        if proc.returncode != 0 and (env := identity_env(root)):
            proc = call(root, args, message, env)
            if proc.returncode == 0:
                _warn_fallback_once(root, env)
    if proc.returncode != 0 and _LOCK_EXISTS.search(proc.stderr):
        raise error("commit", proc)
    return proc


# How long a git call that found another git's lock file keeps retrying (git gives up at
# once; a commit by an orphaned git of a killed writer takes milliseconds).
LOCK_RETRY_S = 1.0


def call(root: Path, args: list[str], input: str | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """One git call, in its own session: a writer killed mid-call, even with its whole
    process group, does not take git down halfway and leave .git/*.lock files behind.
    A call that met another git's lock file is retried for up to LOCK_RETRY_S (a failed
    lock is git's first step, so nothing was done)."""
    deadline = time.monotonic() + LOCK_RETRY_S
    while True:
        proc = subprocess.Popen(
            ["git", "-C", str(root), *args], text=True, start_new_session=True,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **LITERAL, **(env or {})})
        try:
            out, err = proc.communicate(input)
        except BaseException:
            try:  # Ctrl-C: let git finish its few milliseconds rather than kill it midway
                proc.communicate()
            except BaseException:
                proc.kill()
            raise
        done = subprocess.CompletedProcess(args, proc.returncode, out, err)
        if proc.returncode == 0 or not _LOCK_EXISTS.search(err) or time.monotonic() > deadline:
            return done
        time.sleep(0.05)


def _warn_fallback_once(root: Path, env: dict[str, str]) -> None:
    """Say once per store (a marker in .cardmem/) that a person's commit went out under
    cardmem's fallback name; `cardmem doctor` keeps flagging it (tools/cli/doctor.py)."""
    marker = root / ".cardmem" / "identity-fallback-warned"
    if marker.exists():
        return
    try:
        marker.write_text("")
    except OSError:
        return
    who = f"{env.get('GIT_AUTHOR_NAME', FALLBACK_NAME)} <{env.get('GIT_AUTHOR_EMAIL', FALLBACK_EMAIL)}>"
    print(f"cardmem: git identity: none is set, so your commits say {who}; set it with "
          "`git config --global user.name NAME` and `git config --global user.email EMAIL`",
          file=sys.stderr)


def identity_env(root: Path) -> dict[str, str]:
    """Environment for a person's write: cardmem's fallback for only what git lacks
    (environment or config), keeping the user's own parts. (Agent writes use AGENT_ENV.)"""
    out: dict[str, str] = {}
    configured = run(root, "config", "--get-regexp", r"^user\.(name|email)$",
                     check=False).split()  # one call for both
    for part, fallback in (("name", FALLBACK_NAME), ("email", FALLBACK_EMAIL)):
        env_keys = (f"GIT_AUTHOR_{part.upper()}", f"GIT_COMMITTER_{part.upper()}")
        if f"user.{part}" not in configured:
            out.update({k: fallback for k in env_keys if not os.environ.get(k)})
    return out


@dataclass
class Commit:
    commit: str
    author: str
    date: str
    message: str
    paths: list[str]

    def as_dict(self) -> dict:
        return {"commit": self.commit, "author": self.author, "date": self.date,
                "message": self.message, "paths": self.paths}


_REC, _FLD = "\x1e", "\x1f"


def log(root: Path, paths: list[str] | None = None, limit: int | None = None,
        since: str | None = None) -> list[Commit]:
    """Commits newest first, with the paths each touched (none in a repo without commits)."""
    args = ["log", f"--format={_REC}%H{_FLD}%an <%ae>{_FLD}%aI{_FLD}%B{_FLD}", "--name-only",
            "--no-renames"]
    if limit:
        args.append(f"-n{limit}")
    if since:
        args.append(f"--since={since}")
    args.append("--")
    args += paths or []
    proc = call(root, args)
    if proc.returncode != 0:
        if head(root) is None:  # asked only on failure: one git process in the common case
            return []
        raise error("log", proc)
    out = proc.stdout
    commits = []
    for rec in out.split(_REC)[1:]:
        sha, author, date, message, files = rec.split(_FLD)
        commits.append(Commit(sha, author, date, message.strip(),
                              [f for f in files.strip().splitlines() if f]))
    return commits
