"""The answering teammate in Slack (`cardmem slack`): `cardmem ask` where the team talks.

    settings.py   tokens, the Web API base URL and `[slack]` from the environment and the store
    people.py     the asker's person card, by `slack: U…` in its frontmatter
    intake.py     what comes in, checked: the signature on raw bytes, a JSON object, the
                  field types of an event, text cleaned; which events are questions
    answerer.py   one question's life: dedupe, the ack (rung 1 only), the walk, the reply,
                  the receipt (an error or busy line too); bounded queues. Knows the Web
                  API, not Bolt.
    server.py     the Bolt app over it: Socket Mode, or the Events API on --http PORT
    httpd.py      the Events API's HTTP server: a deep listen queue, a bounded handler pool

`slack_bolt` and `slack_sdk` are imported only here, and only when a server is built, so
no other command pays for them.
"""
