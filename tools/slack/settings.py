"""What `cardmem slack` needs from the environment and from `[slack]` in cardmem.toml."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cardmem.store.config import DEFAULTS
from cardmem.store.errors import CardmemError

SLACK_API = "https://slack.com/api/"
QUEUE = DEFAULTS["slack"]["queue"]


@dataclass(frozen=True)
class SlackSettings:
    bot_token: str
    app_token: str  # Socket Mode (xapp-…); "" over HTTP
    signing_secret: str  # the Events API over HTTP; "" in Socket Mode
    api_url: str  # the Web API base, ending in /
    ack: str = "reaction"  # reaction | line | both
    reaction: str = "eyes"
    concurrency: int = 4
    remember: bool = False
    queue: int = QUEUE  # questions waiting for a worker; past it, a busy line in the thread

    @classmethod
    def load(cls, section: Mapping[str, Any] | None, *, http: bool,
             env: Mapping[str, str] | None = None) -> "SlackSettings":
        """From the environment and a checked `[slack]` section; one clear error for a
        missing token or a bad value."""
        env = os.environ if env is None else env
        sec = dict(section or {})
        need = ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET" if http else "SLACK_APP_TOKEN"]
        for name in need:
            if not env.get(name, "").strip():
                how = "the Events API over --http" if http else "Socket Mode"
                raise CardmemError("slack", f"{name} is not set ({how} needs it; README: "
                                            "'Slack')")
        url = (env.get("SLACK_API_URL") or sec.get("api_url") or SLACK_API).strip()
        if not url.startswith(("http://", "https://")):
            raise CardmemError("slack api_url", f"expected an http(s) URL, got {url!r}")
        conc = sec.get("concurrency", 4)
        if isinstance(conc, bool) or not isinstance(conc, int) or not 1 <= conc <= 64:
            raise CardmemError("[slack] concurrency", f"expected 1 to 64, got {conc!r}")
        queue = sec.get("queue", QUEUE)
        if isinstance(queue, bool) or not isinstance(queue, int) or not 0 <= queue <= 10_000:
            raise CardmemError("[slack] queue", f"expected 0 to 10000, got {queue!r}")
        return cls(env["SLACK_BOT_TOKEN"].strip(),
                   "" if http else env["SLACK_APP_TOKEN"].strip(),
                   env["SLACK_SIGNING_SECRET"].strip() if http else "",
                   url.rstrip("/") + "/", str(sec.get("ack", "reaction")),
                   str(sec.get("reaction", "eyes")).strip(":") or "eyes", conc,
                   bool(sec.get("remember", False)), queue)
