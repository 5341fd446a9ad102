"""The docs' memory-tool example runs as written (against the fake Messages API)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from fakeapi import reply, tool_use

README = Path(__file__).resolve().parents[2] / "docs" / "hooks-and-rules.md"


def example() -> str:
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    found = [b for b in blocks if "memory_tool(store)" in b]
    assert len(found) == 1, "docs/hooks-and-rules.md should hold one memory-tool example"
    return found[0]


def test_the_readme_example_remembers_into_a_store(fake_api, tmp_path: Path) -> None:
    fake_api.add(reply(tool_use("memory", {"command": "view", "path": "/memories"})))
    fake_api.add(reply(tool_use("memory", {"command": "create", "path": "/memories/coffee.md",
                                           "file_text": "The user takes coffee black.\n"})))
    fake_api.add("Noted: black coffee.")
    script = tmp_path / "example.py"
    script.write_text(example())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CARDMEM_"))}
    env.update(HOME=str(tmp_path), ANTHROPIC_BASE_URL=fake_api.base_url,
               ANTHROPIC_API_KEY="sk-ant-fake-readme")
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "Noted: black coffee."
    card = tmp_path / "cardmem-demo" / "memories" / "coffee.md"
    assert card.read_text() == "The user takes coffee black.\n"
    first = fake_api.messages_requests()[0]
    assert "context-management-2025-06-27" in first.headers.get("anthropic-beta", "")
    log = subprocess.run(["git", "-C", str(card.parents[1]), "log", "--author=cardmem-agent",
                          "--format=%s"], capture_output=True, text=True, check=True).stdout
    assert log.splitlines() == ["memory: create memories/coffee"]
