"""A `cardmem slack --http` server in the test's process, on the example store, against
the fake Slack Web API (fakeslack.py) and the fake Messages API (fakeapi.py).

    srv = Running(make_store(tmp_path), slack, fake_api, monkeypatch)
    srv.send(mention("who owns the rota?")); srv.wait_done(1); srv.stop()

    with SocketMode(store, slack, fake_api, monkeypatch) as sm:   # over tests/fakesocket.py
        sm.ws.send_event(mention("who owns the rota?")); sm.wait_done(1)
"""
from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

from fakeapi import FakeAPI
from fakeslack import FakeSlack, post_event, signed_event

from cardmem.store.store import init
from cardmem.tools.slack.server import SlackServer
from cardmem.tools.slack.settings import SlackSettings

CARDS = Path(__file__).resolve().parents[1] / "cards"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
MARA = "UMARA001"


def make_store(tmp_path: Path, on_deadline: str = "silence", deadline_s: float = 8.0,
               slack_extra: str = "", walk_s: float = 3.0):
    root = tmp_path / "store"
    shutil.copytree(CARDS, root)
    card = root / "people" / "mara-okonkwo.md"
    card.write_text(card.read_text().replace("type: person\n", f"type: person\nslack: {MARA}\n", 1))
    toml = root / "cardmem.toml"
    toml.write_text(toml.read_text().replace("deadline_s = 30", f"deadline_s = {deadline_s}")
                    .replace("walk_s = 18", f"walk_s = {walk_s}")
                    .replace('on_deadline = "silence"', f'on_deadline = "{on_deadline}"')
                    + '\n[slack]\nack = "both"\n' + slack_extra)
    return init(root)[0]


class Running:
    """A `cardmem slack --http` server in this process, on a free port."""

    def __init__(self, store, slack: FakeSlack, api: FakeAPI, monkeypatch) -> None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
        env = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET,
               "SLACK_API_URL": slack.base_url}
        self.settings = SlackSettings.load(store.config.get("slack"), http=True, env=env)
        self.done: list = []
        self.server = SlackServer.build(store, self.settings, http=True, on_done=self.done.append)
        port = self.server.listen(0)
        self.thread = threading.Thread(target=self.server.serve_http, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{port}/slack/events"

    def send(self, body: dict, **kw) -> tuple[int, str, float]:
        return post_event(self.url, *signed_event(SECRET, body, **kw))

    def wait_done(self, n: int, timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        while len(self.done) < n and time.monotonic() < end:
            time.sleep(0.02)
        assert len(self.done) >= n, f"{len(self.done)} answered of {n}"

    def stop(self, wait: bool = True) -> None:
        self.server.stop(wait=wait)


class SocketMode:
    """`cardmem slack` in Socket Mode in this process, connected to a fake Socket Mode
    endpoint (fakesocket.py) that the fake Web API's apps.connections.open hands out."""

    def __init__(self, store, slack: FakeSlack, api: FakeAPI, monkeypatch) -> None:
        from fakesocket import FakeSocket

        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
        self.settings = SlackSettings.load(store.config.get("slack"), http=False, env={
            "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_APP_TOKEN": "xapp-1-test",
            "SLACK_API_URL": slack.base_url})
        self.store, self.slack, self.done = store, slack, []
        self.ws = FakeSocket()

    def __enter__(self) -> "SocketMode":
        self.ws.__enter__()
        self.slack.socket_url = self.ws.url
        self.server = SlackServer.build(self.store, self.settings, http=False,
                                        on_done=self.done.append)
        self.thread = threading.Thread(target=self.server.serve_socket_mode, daemon=True)
        self.thread.start()
        self.ws.wait_connected()
        return self

    def wait_done(self, n: int, timeout: float = 10.0) -> None:
        end = time.monotonic() + timeout
        while len(self.done) < n and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.3)  # a second answer to any of them would land by now

    def __exit__(self, *exc: object) -> None:
        try:
            self.server.stop()
            self.thread.join(5)
        finally:
            self.ws.__exit__(*exc)
