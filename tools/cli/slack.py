"""`cardmem slack`: the answering teammate in Slack, a thin shell over tools/slack/."""
from __future__ import annotations

import signal
from pathlib import Path

import click

from .options import open_store, store_option
from ..slack.answerer import stderr_logging
from ..slack.server import EVENTS_PATH, SlackServer
from ..slack.settings import SlackSettings


@click.command()
@click.option("--http", "port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve the Events API at http://HOST:PORT/slack/events (needs "
                   "SLACK_SIGNING_SECRET) instead of Socket Mode (SLACK_APP_TOKEN).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="With --http: the address to listen on.")
@store_option
def slack(port: int | None, host: str, store_path: Path | None) -> None:
    """Answer mentions and direct messages in Slack from memory, in the asker's thread.

    Each question is acked at once (a reaction and/or a line, built from memory without
    the model), then answered within `[walk] deadline_s` in its thread (or told what went
    wrong, or, past `[slack] queue` waiting, to ask again later); each leaves a receipt
    (`cardmem receipts`). Over --http, unsigned or malformed requests get a 4xx and at
    most one line on stderr. Needs SLACK_BOT_TOKEN; the Web API base is SLACK_API_URL,
    else `[slack] api_url`.

    \b
    Example:
        SLACK_BOT_TOKEN=xoxb-… SLACK_APP_TOKEN=xapp-… cardmem slack
        SLACK_BOT_TOKEN=xoxb-… SLACK_SIGNING_SECRET=… cardmem slack --http 3000
    """
    store = open_store(store_path)
    http = port is not None
    settings = SlackSettings.load(store.config.get("slack"), http=http)
    server = SlackServer.build(store, settings, http=http)
    stderr_logging()
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if http:
            bound = server.listen(port, host)
            click.echo(f"cardmem slack: the Events API at http://{host}:{bound}{EVENTS_PATH}; "
                       "Ctrl-C stops", err=True)
            server.serve_http()
        else:
            click.echo("cardmem slack: connecting to Slack in Socket Mode; Ctrl-C stops", err=True)
            server.serve_socket_mode()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop(wait=False)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt
