"""Provider token shapes: the catalogue `redact` runs (see cardmem.tools.secrets.redact).

Most rules are ported from gitleaks' rule set (config/gitleaks.toml,
https://github.com/gitleaks/gitleaks, MIT License, Copyright (c) 2019 Zachary Rice):
its prefixes, alphabets and lengths, rewritten for Python's regex engine. Rules that
gitleaks only fires next to a provider's name (`mailgun ... key-...`) are kept when
the token's own shape is distinctive enough without it; the rest are left to the
assignment rules and the entropy net in redact.py. A few shapes gitleaks lacks
(Docker Hub, Groq, Replicate, Tailscale, ...) are ours.

Each rule is a token opening with a fixed-width `head` (a literal or a short class),
then a `body`. Like gitleaks, a rule lists lowercase `needles` (keywords), of which one
must occur in the text for its regex to run at all; redact.py looks for them once, in
the text's long words, which is what keeps 150 rules cheap.
"""
from __future__ import annotations

import re
from typing import Callable, NamedTuple

# A character that may continue a token: a match glued to one is not a token.
_TOKEN_CHAR = "[A-Za-z0-9_-]"


class TokenRule(NamedTuple):
    kind: str
    pattern: str  # the secret is group `s`
    needles: tuple[str, ...]  # lowercase; one must occur in a long word of the text
    left: int = 0  # the secret starts this many characters before group `s`
    accept: Callable[[re.Match[str], str], bool] | None = None


def has_digit_and_letter(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def random_looking(m: re.Match[str], _text: str) -> bool:
    # Real keys are random, letters and digits mixed; a slug such as
    # sk-this-is-not-a-key-at-all is left alone.
    return has_digit_and_letter(m.group("s"))


def _mixed_case(m: re.Match[str], _text: str) -> bool:
    # Hugging Face tokens may be all letters, but never all of one case.
    s = m.group("s")[3:]
    return s != s.lower() and s != s.upper()


def _telegram(m: re.Match[str], text: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9_])[0-9]{5,16}:\Z", text[max(0, m.start() - 18) : m.start() + 1]) is not None


_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def _not_in_base64(m: re.Match[str], text: str) -> bool:
    # A short head such as EAAA also turns up inside base64 data (an image, a key)
    # next to a '+' or '/'. A token in a URL path has a '/' around it too, but its
    # base64-looking run holds no '+' and soon ends; a blob's goes on.
    start, end = m.start("s"), m.end("s")
    lo, hi = start, end
    while lo > 0 and start - lo < 64 and text[lo - 1] in _B64:
        lo -= 1
    while hi < len(text) and hi - end < 64 and text[hi] in _B64:
        hi += 1
    run = text[lo:start] + text[end:hi]
    return "+" not in run and start - lo < 64 and hi - end < 64


def T(kind: str, head: str, body: str, needles: tuple[str, ...] | None = None, *,
      before: str = "", left: int = 0, accept=None, literal: bool = True) -> TokenRule:
    """A token `head` + `body` not glued to a longer token on either side.

    The boundary check sits after the head, as a look-behind over it: Python's regex engine
    scans fast for a leading literal but tries a leading look-behind at every position (far
    slower on a long text: bench/RESULTS.md, "Figures from comments"). A token whose
    distinctive part is in its middle (`<14 characters>.atlasv1.<60>`) has the `left`
    characters matching `before` ahead of its head; they are part of the secret too.
    """
    h = re.escape(head) if literal else head
    ahead = rf"(?<={before}{h})" if before else ""
    pattern = rf"(?P<s>{h}{ahead}(?<!{_TOKEN_CHAR}{before}{h}){body})(?!{_TOKEN_CHAR})"
    return TokenRule(kind, pattern, needles or (head.lower(),), left, accept)


AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")

# Order matters where heads overlap: the longer, more specific shape comes first
# (sk-ant- before sk-, eyJrIjoi and ops_eyJ before a bare JWT, xoxe.xoxb- before xoxb-).
TOKENS: tuple[TokenRule, ...] = (
    # --- AI model providers
    T("anthropic-key", "sk-ant-", "[A-Za-z0-9_-]{20,}"),
    T("openai-key", "sk-", "(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", accept=random_looking),
    T("huggingface-token", "hf_", "[A-Za-z0-9]{34,}", accept=_mixed_case),
    T("huggingface-token", "api_org_", "[A-Za-z]{34}"),
    T("groq-key", "gsk_", "[A-Za-z0-9]{48,}"),
    T("replicate-token", "r8_", "[A-Za-z0-9]{37}"),
    T("perplexity-key", "pplx-", "[A-Za-z0-9]{48}"),
    T("xai-key", "xai-", "[A-Za-z0-9]{70,}"),
    T("pinecone-key", "pcsk_", "[A-Za-z0-9_]{50,}"),
    T("langsmith-key", "lsv2_", "(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    T("tavily-key", "tvly-", "(?:dev-|prod-)?[A-Za-z0-9]{32}"),
    T("elevenlabs-key", "sk_", "[a-f0-9]{48}"),
    # --- cloud
    T("aws-key", "(?:A3T[A-Z0-9]|" + "|".join(AWS_PREFIXES) + ")", "[A-Z0-9]{16}",
      ("a3t",) + tuple(p.lower() for p in AWS_PREFIXES), literal=False),
    T("aws-bedrock-key", "ABSK", "[A-Za-z0-9+/]{109,269}={0,2}", accept=_not_in_base64),
    T("google-api-key", "AIza", "[0-9A-Za-z_-]{35}"),
    T("google-oauth-secret", "GOCSPX-", "[A-Za-z0-9_-]{20,}"),
    T("google-oauth-token", "ya29.", "[0-9A-Za-z_-]{20,}"),
    T("azure-ad-client-secret", "Q~", "[A-Za-z0-9_~.-]{31,34}", before="[A-Za-z0-9_~.]{3}[0-9]",
      left=4),
    T("alibaba-key", "LTAI", "[A-Za-z0-9]{20}", accept=_not_in_base64),
    T("digitalocean-token", "do[opr]_v1_", "[a-f0-9]{64}", ("_v1_",), literal=False),
    T("cloudflare-origin-ca-key", "v1.0-", "[a-f0-9]{24}-[a-f0-9]{146}"),
    T("heroku-api-key", "HRKU-", "[A-Za-z0-9_-]{40,}"),
    T("flyio-token", "fo1_", r"[\w-]{43}"),
    T("flyio-token", "fm", "(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3}", ("fm1", "fm2_")),
    T("scalingo-token", "tk-us-", r"[\w-]{48}"),
    T("tailscale-key", "tskey-", "[a-z]+-[A-Za-z0-9]{8,}-[A-Za-z0-9]{16,}"),
    T("supabase-token", "sbp_", "[a-f0-9]{40}"),
    T("render-key", "rnd_", "[A-Za-z0-9]{32}"),
    T("netlify-token", "nfp_", "[A-Za-z0-9]{36,}"),
    T("planetscale-token", "pscale_", r"(?:tkn|oauth|pw)_[\w=.-]{32,64}"),
    T("clickhouse-key", "4b1d", "[A-Za-z0-9]{38}", accept=_not_in_base64),
    T("databricks-token", "dapi", "[a-f0-9]{32}(?:-[0-9])?"),
    T("dynatrace-token", "dt0c01.", "[A-Za-z0-9]{24}\\.[A-Za-z0-9]{64}"),
    T("terraform-token", ".atlasv1.", "[A-Za-z0-9_=-]{60,}", before="[A-Za-z0-9]{14}", left=14),
    T("vault-token", "hv[sbr]\\.", "[A-Za-z0-9_-]{20,}", ("hvs.", "hvb.", "hvr."), literal=False),
    T("doppler-token", "dp.", "(?:pt|st(?:\\.[a-z0-9_-]+)?|ct|sa|scim|audit)\\.[A-Za-z0-9]{40,}", ("dp.",)),
    T("pulumi-token", "pul-", "[a-f0-9]{40}"),
    T("harness-key", "(?:pat|sat)\\.", "[A-Za-z0-9_-]{22}\\.[A-Za-z0-9]{24}\\.[A-Za-z0-9]{20}",
      ("pat.", "sat."), literal=False),
    T("infracost-token", "ico-", "[A-Za-z0-9]{32}"),
    T("openshift-token", "sha256~", r"[\w-]{43}"),
    T("defined-networking-token", "dnkey-", "[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}"),
    # --- code hosting, CI, packages
    T("github-token", "gh[pousr]_", "[A-Za-z0-9]{36,255}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
      literal=False),
    T("github-token", "github_pat_", "[A-Za-z0-9_]{22,255}"),
    T("gitlab-token", "gl", "(?:pat|dt|ft|rt|soat|cbt|ffct|imt|agent|oas|ptt)-[A-Za-z0-9_.-]{20,}",
      ("glpat-", "gldt-", "glft-", "glrt-", "glsoat-", "glcbt-", "glffct-", "glimt-", "glagent-",
       "gloas-", "glptt-")),
    T("gitlab-token", "GR1348941", r"[\w-]{20}"),
    T("gitlab-token", "_gitlab_session=", "[0-9a-z]{32}"),
    T("npm-token", "npm_", "[A-Za-z0-9]{36}"),
    T("pypi-token", "pypi-", "Ag[A-Za-z0-9_-]{60,}"),
    T("rubygems-token", "rubygems_", "[a-f0-9]{48}"),
    T("clojars-token", "CLOJARS_", "[a-z0-9]{60}"),
    T("docker-token", "dckr_", "(?:pat|oat)_[A-Za-z0-9_-]{20,}"),
    T("artifactory-key", "AKCp", "[A-Za-z0-9]{69}", accept=_not_in_base64),
    T("artifactory-key", "cmVmd", "[A-Za-z0-9]{59}", accept=_not_in_base64),
    T("buildkite-token", "bkua_", "[a-f0-9]{40}"),
    T("circleci-token", "CCIPAT_", "[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    T("prefect-key", "pnu_", "[A-Za-z0-9]{36}"),
    T("readme-key", "rdme_", "[a-z0-9]{70}"),
    T("postman-key", "PMAK-", "[a-f0-9]{24}-[a-f0-9]{34}"),
    T("sentry-token", "sntrys_", "[A-Za-z0-9+/=_]{60,}"),
    T("sentry-token", "sntryu_", "[a-f0-9]{64}"),
    T("grafana-token", "glsa_", "[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    T("grafana-token", "glc_", "[A-Za-z0-9+/]{32,}={0,3}"),
    T("grafana-token", "eyJrIjoi", "[A-Za-z0-9]{70,}={0,3}"),
    T("newrelic-key", "NR(?:AK|II|JS)-", "[A-Za-z0-9_-]{19,}", ("nrak-", "nrii-", "nrjs-"), literal=False),
    T("sourcegraph-token", "sgp_", "(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}"),
    T("octopus-key", "API-", "[A-Z0-9]{26}", accept=random_looking),
    T("settlemint-token", "sm_", "(?:aat|pat|sat)_[A-Za-z0-9]{16}"),
    T("linear-key", "lin_api_", "[A-Za-z0-9]{40}"),
    T("atlassian-token", "AT[AC]TT3", "[A-Za-z0-9_=-]{100,}", ("atatt3", "atctt3"), literal=False),
    T("notion-token", "ntn_", "[0-9]{11}[A-Za-z0-9]{35}"),
    T("notion-token", "secret_", "[A-Za-z0-9]{43}", accept=random_looking),
    T("figma-token", "figd_", "[A-Za-z0-9_-]{40}"),
    T("typeform-token", "tfp_", "[A-Za-z0-9_.=-]{59}"),
    T("airtable-token", "pat", "[A-Za-z0-9]{14}\\.[a-f0-9]{64}"),
    T("1password-token", "ops_eyJ", "[A-Za-z0-9+/]{250,}={0,3}"),
    T("1password-secret-key", "A3-", "[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
      "-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"),
    T("age-secret-key", "AGE-SECRET-KEY-1", "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    T("adobe-secret", "p8e-", "[A-Za-z0-9]{32}"),
    T("maxmind-key", "_mmk", "", before="[A-Za-z0-9]{6}_[A-Za-z0-9]{29}", left=36),
    T("intra42-secret", "s-s4t2", "(?:ud|af)-[a-f0-9]{64}"),
    # --- messaging, mail, payments
    T("slack-token", "xoxe.xox[bp]-", "[0-9]-[A-Za-z0-9]{100,}", ("xoxe.",), literal=False),
    T("slack-token", "xox[abposre]-", "[A-Za-z0-9-]{10,}", ("xox",), literal=False,
      accept=random_looking),
    T("slack-token", "xapp-", "[0-9]-[A-Za-z0-9-]{10,}"),
    # <bot id>:<35 characters>; the id alone is public, the rest is the secret.
    TokenRule("telegram-bot-token", r":(?P<s>A[A-Za-z0-9_-]{34})(?![A-Za-z0-9_-])", (":a",),
              accept=_telegram),
    T("sendgrid-key", "SG.", "[A-Za-z0-9_-]{16,32}\\.[A-Za-z0-9_-]{30,64}"),
    T("sendinblue-key", "xkeysib-", "[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    T("mailgun-key", "key-", "[0-9a-f]{32}"),
    T("mailchimp-key", "-us", "[0-9]{1,2}", before="[a-f0-9]{32}", left=32),
    T("resend-key", "re_", "[A-Za-z0-9]{8}_[A-Za-z0-9]{24}"),
    T("twilio-key", "SK", "[0-9a-f]{32}"),
    T("stripe-key", "sk_", "(?:live|test|prod)_[A-Za-z0-9]{16,}", ("sk_live_", "sk_test_", "sk_prod_")),
    T("stripe-key", "rk_", "(?:live|test|prod)_[A-Za-z0-9]{16,}", ("rk_live_", "rk_test_", "rk_prod_")),
    T("stripe-webhook-secret", "whsec_", "[A-Za-z0-9]{24,}"),
    T("square-token", "EAAA", "[A-Za-z0-9_-]{22,60}", accept=_not_in_base64),
    T("square-token", "sq0(?:atp|csp)-", "[A-Za-z0-9_-]{22,60}", ("sq0atp-", "sq0csp-"), literal=False),
    T("facebook-token", "EAA[MC]", "[A-Za-z0-9]{100,}", ("eaam", "eaac"), literal=False, accept=_not_in_base64),
    T("shopify-token", "shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32}",
      ("shpat_", "shpca_", "shppa_", "shpss_"), literal=False),
    T("shippo-token", "shippo_", "(?:live|test)_[a-fA-F0-9]{40}"),
    T("duffel-token", "duffel_", "(?:test|live)_[A-Za-z0-9_=-]{43}"),
    T("easypost-key", "EZ[AT]K", "[A-Za-z0-9]{54}", ("ezak", "eztk"), literal=False),
    T("flutterwave-key", "FLWSECK", "(?:_TEST)?-[a-hA-H0-9]{32}-X"),
    T("frameio-token", "fio-u-", "[A-Za-z0-9_=-]{64}"),
    T("mapbox-token", "sk.eyJ", "[A-Za-z0-9_-]{20,}\\.[A-Za-z0-9_-]{20,}"),
    # header.payload.signature, each base64url; the header is JSON, so it opens "eyJ".
    T("jwt", "eyJ", "[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*"),
)

# Secrets that live in URLs and config files, found by the text around them.
WEBHOOKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{10,})",
     ("hooks.slack.com",)),
    ("discord-webhook", r"discord(?:app)?\.com/api/webhooks/(?P<s>\d+/[A-Za-z0-9_-]{20,})",
     ("/api/webhooks/",)),
    ("teams-webhook", r"\.webhook\.office\.com/webhookb2/(?P<s>[A-Za-z0-9@/-]{40,})",
     ("webhook.office.com",)),
    # An Azure shared access signature in a URL or a connection string.
    ("azure-sas", r"[?&;]sig=(?P<s>[A-Za-z0-9%+/=]{16,})", ("sig=",)),
)
