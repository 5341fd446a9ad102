"""Read a bounded excerpt of a session transcript (JSONL): Claude Code's, Codex's rollout,
Gemini CLI's chat, Cursor's agent transcript or Copilot CLI's session events.

Claude Code appends one JSON object per line to
`~/.claude/projects/<project>/<session>.jsonl`: `{"type": "user" | "assistant" |
"system" | "summary" | "file-history-snapshot" | ..., "uuid", "parentUuid",
"sessionId", "cwd", "isSidechain", "isMeta", "message": {"role", "content", "id"}}`.
`message.content` is a string or a list of blocks (`text`, `tool_use`, `tool_result`,
`thinking`, `image`). An assistant reply is written one line per content block, all
lines sharing `message.id`.

The excerpt keeps what the person and the model said to each other and nothing the
harness wrote: no tool calls or results, no thinking, no sub-agent (sidechain) lines,
no meta lines, no compaction summaries, no slash-command echoes or system reminders.
The format is undocumented and the file is being written while we read it, so every
line is parsed defensively and anything unexpected is skipped, never fatal.

Pure standard library. Secrets are removed by the caller's `redact` (see
cardmem.tools.secrets.redact), which read_excerpt applies to each turn before cutting it: a
token cut in half would no longer be recognised.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Literal

MIN_SESSION_BYTES = 1_000

# Harness-written markup inside user text: the tag and everything in it goes. An
# unclosed tag (a cut line) runs to the end of the text.
_HARNESS_TAGS = (
    "command-name",
    "command-message",
    "command-args",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "system-reminder",
    "task-notification",
    # Codex writes these into user messages (hosts/codex): the harness's, not the person's
    "environment_context",
    "user_instructions",
    # ... and Gemini CLI these (hosts/gemini): its own preamble, and hooks' context
    "session_context",
    "hook_context",
)
_HARNESS_RE = re.compile(
    r"<(" + "|".join(_HARNESS_TAGS) + r")(?:\s[^>]*)?>[\s\S]*?(?:</\1\s*>|\Z)"
)
# Lines Claude Code writes as user text when a turn is cut short.
_INTERRUPTS = frozenset(
    {"[Request interrupted by user]", "[Request interrupted by user for tool use]"}
)


@dataclass(frozen=True)
class Turn:
    role: Literal["user", "assistant"]
    text: str


def should_skip(path: str | os.PathLike[str], min_bytes: int = MIN_SESSION_BYTES) -> bool:
    """True for a session too small to hold anything worth learning (or no file)."""
    try:
        return os.stat(path).st_size < min_bytes
    except OSError:
        return True


def read_excerpt(
    path: str | os.PathLike[str],
    max_bytes: int = 2_000_000,
    max_turns: int = 20,
    turn_chars: int = 1500,
    redact: Callable[[str], str] = lambda text: text,
) -> list[Turn]:
    """The last `max_turns` user/assistant turns of the transcript's last `max_bytes`,
    each passed through `redact`, then cut to `turn_chars` characters. Raises OSError
    if the file cannot be read."""
    turns: list[Turn] = []
    last_msg_id: str | None = None  # message.id of turns[-1], when it is an assistant's
    for record in _records(_tail_lines(path, max_bytes)):
        role, text, msg_id = record
        if role == "assistant" and msg_id is not None and msg_id == last_msg_id and turns:
            # another content block of the same reply: one turn, not several
            turns[-1] = Turn("assistant", turns[-1].text + "\n\n" + text)
            continue
        turns.append(Turn(role, text))
        last_msg_id = msg_id if role == "assistant" else None
    kept = turns[-max_turns:] if max_turns > 0 else []
    return [Turn(t.role, _cut(redact(t.text), turn_chars)) for t in kept]


def talk_since(path: str | os.PathLike[str], offset: int, max_bytes: int = 1 << 20) -> bool:
    """Whether conversation was added after byte `offset` (where a learner read up to).
    A transcript also grows by lines that teach nothing (system lines, snapshots, a
    summary after Stop): a second learner extracts only for talk. Growth past max_bytes
    is taken as talk without reading it."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size - offset > max_bytes:
                return True
            start = max(0, offset - 65536)  # from the start of the line holding offset:
            f.seek(start)  # a line being written when the mark was taken counts as new
            data = f.read(size - start)
    except OSError:
        return True
    head = data[: offset - start]
    cut = head.rfind(b"\n")
    data = data[cut + 1:] if cut >= 0 else (data if start == 0 else data[len(head):])
    return any(True for _ in _records(data.decode("utf-8", errors="replace").split("\n")))


def _tail_lines(path: str | os.PathLike[str], max_bytes: int) -> list[str]:
    """The complete lines among the file's last `max_bytes` bytes."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        start = max(0, size - max_bytes)
        if start > 0:
            # The byte before the window says whether it opens on a line boundary;
            # if not, its first line is a fragment and is dropped.
            f.seek(start - 1)
            at_boundary = f.read(1) == b"\n"
        else:
            at_boundary = True
        data = f.read(size - start)
    if not at_boundary:
        cut = data.find(b"\n")
        data = b"" if cut < 0 else data[cut + 1 :]
    # split on \n only: JSON strings may hold U+2028 and friends, which
    # str.splitlines would treat as line ends.
    return data.decode("utf-8", errors="replace").split("\n")


def _records(lines: list[str]) -> Iterator[tuple[Literal["user", "assistant"], str, str | None]]:
    """(role, text, message id) for each line that carries conversation text."""
    for line in lines:
        line = line.strip()
        if not line or line[0] != "{":
            continue
        try:
            obj = json.loads(line)
        except ValueError:  # a torn last line, or not JSON at all
            continue
        if not isinstance(obj, dict):
            continue
        if obj.get("type") == "response_item":  # a Codex rollout line (hosts/codex)
            obj = _codex_line(obj.get("payload"))
        elif obj.get("type") in ("user", "gemini") and "message" not in obj:
            obj = _gemini_line(obj)  # a Gemini CLI chat line (hosts/gemini)
        elif obj.get("type") in ("user.message", "assistant.message"):
            obj = _copilot_line(obj)  # a Copilot CLI session event (hosts/copilot)
        elif "type" not in obj and obj.get("role") in ("user", "assistant"):
            obj = _cursor_line(obj)  # a Cursor agent transcript line (hosts/cursor)
        if obj is None:
            continue
        role = obj.get("type")
        if role not in ("user", "assistant"):
            continue  # summary, system, file-history-snapshot, progress, ...
        if obj.get("isSidechain") or obj.get("isMeta") or obj.get("isCompactSummary"):
            continue
        message = obj.get("message")
        if not isinstance(message, dict) or message.get("role", role) != role:
            continue
        text = _text_of(message.get("content"))
        if role == "user":
            text = _HARNESS_RE.sub("", text)
        text = text.strip()
        if not text or text in _INTERRUPTS:
            continue
        msg_id = message.get("id")
        yield role, text, msg_id if isinstance(msg_id, str) else None


def _codex_line(item: Any) -> dict[str, Any] | None:
    """A Codex rollout's `response_item` message in Claude Code's shape (None: not talk).
    Codex keeps a session in ~/.codex/sessions/…/rollout-*.jsonl, one
    `{"type": "response_item", "payload": {"type": "message", "role", "content": [{"type":
    "input_text" | "output_text", "text"}]}}` per message; developer messages (the
    harness's, cardmem's own context among them), tool calls and events are not talk."""
    if not isinstance(item, dict) or item.get("type") != "message":
        return None
    role = item.get("role")
    if role not in ("user", "assistant") or not isinstance(item.get("content"), list):
        return None
    blocks = [{"type": "text", "text": b.get("text")} for b in item["content"]
              if isinstance(b, dict) and b.get("type") in ("input_text", "output_text")]
    return {"type": role, "message": {"role": role, "content": blocks, "id": item.get("id")}}


def _gemini_line(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A Gemini CLI chat line (~/.gemini/tmp/<project>/chats/session-*.jsonl: `{"id",
    "type": "user" | "gemini", "content": "…" | [{"text"}, {"functionCall"}, …]}`) in
    Claude Code's shape. A reply is written again as it grows, under the same id, so its
    id is not kept: the merge of one reply's blocks would repeat it."""
    content = obj.get("content")
    if isinstance(content, list):
        content = [{"type": "text", "text": b["text"]} for b in content
                   if isinstance(b, dict) and isinstance(b.get("text"), str)]
    role = "assistant" if obj["type"] == "gemini" else "user"
    return {"type": role, "message": {"role": role, "content": content}}


def _cursor_line(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A Cursor agent transcript line in Claude Code's shape. Cursor's `stop` hook names the
    file (`transcript_path`, https://cursor.com/docs/agent/hooks; it is null when transcripts
    are off): ~/.cursor/projects/<workspace>/agent-transcripts/<id>/<id>.jsonl, one
    `{"role": "user" | "assistant", "message": {"content": [{"type": "text", "text"},
    {"type": "tool_use", …}]}}` per message, between `{"type": "turn_ended"}` markers (no
    tool results). The person's words are inside `<user_query>`; what Cursor wraps around
    them (timestamp, attached files, rules) is the harness's. Thinking shows as
    `[REDACTED]`."""
    message = obj.get("message")
    if not isinstance(message, dict):
        return None
    role = obj["role"]
    text = _text_of(message.get("content"))
    if role == "user" and "<user_query>" in text:
        text = "\n\n".join(_USER_QUERY_RE.findall(text))
    elif role == "assistant":
        text = text.replace("[REDACTED]", "")
    return {"type": role, "message": {"role": role, "content": text}}


_USER_QUERY_RE = re.compile(r"<user_query>\s*([\s\S]*?)\s*(?:</user_query>|\Z)")


def _copilot_line(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A Copilot CLI session event in Claude Code's shape. Copilot keeps a session in
    ~/.copilot/session-state/<session id>/events.jsonl ($COPILOT_HOME for ~/.copilot;
    https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-config-dir-reference),
    which `agentStop` names as `transcriptPath`
    (https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference):
    one `{"type", "data", "id", "timestamp", "parentId"}` per line; talk is `user.message`
    and `assistant.message` with the text in `data.content` (an assistant message that only
    calls tools has none); tool runs, turns and session events are not talk."""
    data = obj.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("content"), str):
        return None
    role = "user" if obj["type"] == "user.message" else "assistant"
    return {"type": role, "message": {"role": role, "content": data["content"]}}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        # only text blocks: tool_use, tool_result, thinking and images are skipped
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str) and text.strip():
                if text.strip() not in _INTERRUPTS:
                    parts.append(text)
    return "\n\n".join(parts)


def _cut(text: str, limit: int) -> str:
    # keep the head (where a turn states what it is about); "…" marks the cut
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…" if limit > 0 else ""
