"""A redaction corpus: fake secrets of over 100 formats, each rendered four ways (prose,
env file, JSON or YAML, URL or shell command), and 200 realistic non-secrets.

Values are generated (fixed seed) with each provider's prefix, alphabet and length,
so they look real to the redactor but were never issued by anyone. Formats follow
gitleaks' rule set (config/gitleaks.toml) plus what people paste that it lacks.
"""
from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
import zlib
from dataclasses import dataclass

rng = random.Random(20261201)

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DIG = string.digits
ALNUM = UP + LO + DIG
UPNUM = UP + DIG
LONUM = LO + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def r(alphabet: str, n: int) -> str:
    """n characters of alphabet; with letters and digits mixed when it has both."""
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        letters, digits = any(c.isalpha() for c in alphabet), any(c.isdigit() for c in alphabet)
        if (not letters or any(c.isalpha() for c in s)) and (not digits or any(c.isdigit() for c in s)):
            if not (set(alphabet) >= set(UP + LO)) or (s != s.lower() and s != s.upper()):
                return s


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def pem(label: str) -> str:
    body = b64(rng.randbytes(300))
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"


@dataclass(frozen=True)
class Format:
    name: str
    value: str  # the secret; none of it may survive
    kind: str | None  # the marker expected in prose, for a shape known on its own
    renderings: tuple[str, str, str, str]  # prose, env, json/yaml, url/shell


def _token(i: int, name: str, kind: str, env: str, value: str) -> Format:
    key = env.lower()
    data = (f'{{"service": "billing", "{key}": "{value}", "region": "eu-west-1"}}\n' if i % 2 == 0
            else f"service: billing\n{key}: {value}\nregion: eu-west-1\n")
    shell = (f"$ echo {value} | deployctl login --with-token && deployctl status\n" if i % 2 == 0
             else f"$ curl -sS https://ci.example.com/hooks/{value}/run?ref=main\n")
    return Format(name, value, kind, (
        f"ok so the new one is {value} (rotated this morning), the old one is revoked.\n",
        f"# {name}\nNODE_ENV=production\n{env}={value}\nLOG_LEVEL=info\n",
        data,
        shell,
    ))


# (name, marker kind, env var, value): shapes the redactor knows without context.
TOKENS = [
    ("Anthropic API key", "anthropic-key", "ANTHROPIC_API_KEY", "sk-ant-api03-" + r(B64URL, 93) + "AA"),
    ("Anthropic admin key", "anthropic-key", "ANTHROPIC_ADMIN_KEY", "sk-ant-admin01-" + r(B64URL, 93) + "AA"),
    ("OpenAI legacy key", "openai-key", "OPENAI_API_KEY", "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20)),
    ("OpenAI project key", "openai-key", "OPENAI_API_KEY", "sk-proj-" + r(B64URL, 156)),
    ("OpenAI service account key", "openai-key", "OPENAI_KEY", "sk-svcacct-" + r(B64URL, 120)),
    ("OpenRouter key", "openai-key", "OPENROUTER_API_KEY", "sk-or-v1-" + r(HEX, 64)),
    ("Hugging Face token (letters only)", "huggingface-token", "HF_TOKEN", "hf_" + r(UP + LO, 34)),
    ("Hugging Face token", "huggingface-token", "HUGGING_FACE_HUB_TOKEN", "hf_" + r(ALNUM, 34)),
    ("Hugging Face org token", "huggingface-token", "HF_ORG_TOKEN", "api_org_" + r(UP + LO, 34)),
    ("Groq key", "groq-key", "GROQ_API_KEY", "gsk_" + r(ALNUM, 52)),
    ("Replicate token", "replicate-token", "REPLICATE_API_TOKEN", "r8_" + r(ALNUM, 37)),
    ("Perplexity key", "perplexity-key", "PPLX_API_KEY", "pplx-" + r(ALNUM, 48)),
    ("xAI key", "xai-key", "XAI_API_KEY", "xai-" + r(ALNUM, 80)),
    ("Pinecone key", "pinecone-key", "PINECONE_API_KEY", "pcsk_" + r(ALNUM, 6) + "_" + r(ALNUM, 60)),
    ("LangSmith key", "langsmith-key", "LANGSMITH_API_KEY", "lsv2_pt_" + r(HEX, 32) + "_" + r(HEX, 10)),
    ("Tavily key", "tavily-key", "TAVILY_API_KEY", "tvly-dev-" + r(ALNUM, 32)),
    ("ElevenLabs key", "elevenlabs-key", "ELEVENLABS_API_KEY", "sk_" + r(HEX, 48)),
    ("AWS access key id", "aws-key", "AWS_ACCESS_KEY_ID", "AKIA" + r(UPNUM, 16)),
    ("AWS session key id", "aws-key", "AWS_ACCESS_KEY_ID", "ASIA" + r(UPNUM, 16)),
    ("AWS Bedrock API key", "aws-bedrock-key", "AWS_BEARER_TOKEN_BEDROCK", "ABSK" + r(ALNUM, 130) + "="),
    ("Google API key", "google-api-key", "GOOGLE_API_KEY", "AIza" + r(B64URL, 35)),
    ("Google OAuth client secret", "google-oauth-secret", "GOOGLE_CLIENT_SECRET", "GOCSPX-" + r(B64URL, 28)),
    ("Google OAuth access token", "google-oauth-token", "GOOGLE_ACCESS_TOKEN", "ya29.a0" + r(B64URL, 150)),
    ("Azure AD client secret", "azure-ad-client-secret", "AZURE_CLIENT_SECRET", r(ALNUM, 3) + "8Q~" + r(ALNUM + "_~.-", 34)),
    ("Alibaba access key id", "alibaba-key", "ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI" + r(ALNUM, 20)),
    ("DigitalOcean PAT", "digitalocean-token", "DIGITALOCEAN_TOKEN", "dop_v1_" + r(HEX, 64)),
    ("DigitalOcean OAuth token", "digitalocean-token", "DO_OAUTH_TOKEN", "doo_v1_" + r(HEX, 64)),
    ("Cloudflare origin CA key", "cloudflare-origin-ca-key", "CF_ORIGIN_CA_KEY", "v1.0-" + r(HEX, 24) + "-" + r(HEX, 146)),
    ("Heroku API key", "heroku-api-key", "HEROKU_API_KEY", "HRKU-AA" + r(B64URL, 58)),
    ("Fly.io token", "flyio-token", "FLY_API_TOKEN", "fo1_" + r(B64URL, 43)),
    ("Fly.io macaroon", "flyio-token", "FLY_ACCESS_TOKEN", "fm2_" + r(ALNUM + "+/", 180)),
    ("Scalingo token", "scalingo-token", "SCALINGO_API_TOKEN", "tk-us-" + r(B64URL, 48)),
    ("Tailscale auth key", "tailscale-key", "TS_AUTHKEY", "tskey-auth-" + r(ALNUM, 12) + "CNTRL-" + r(ALNUM, 33)),
    ("Supabase access token", "supabase-token", "SUPABASE_ACCESS_TOKEN", "sbp_" + r(HEX, 40)),
    ("Render API key", "render-key", "RENDER_API_KEY", "rnd_" + r(ALNUM, 32)),
    ("Netlify PAT", "netlify-token", "NETLIFY_AUTH_TOKEN", "nfp_" + r(ALNUM, 40)),
    ("PlanetScale token", "planetscale-token", "PLANETSCALE_SERVICE_TOKEN", "pscale_tkn_" + r(B64URL, 43)),
    ("PlanetScale password", "planetscale-token", "DATABASE_PASSWORD", "pscale_pw_" + r(B64URL, 43)),
    ("ClickHouse Cloud key", "clickhouse-key", "CLICKHOUSE_SECRET", "4b1d" + r(ALNUM, 38)),
    ("Databricks token", "databricks-token", "DATABRICKS_TOKEN", "dapi" + r(HEX, 32)),
    ("Dynatrace token", "dynatrace-token", "DT_API_TOKEN", "dt0c01." + r(UPNUM, 24) + "." + r(UPNUM, 64)),
    ("Terraform Cloud token", "terraform-token", "TFE_TOKEN", r(ALNUM, 14) + ".atlasv1." + r(B64URL, 67)),
    ("Vault service token", "vault-token", "VAULT_TOKEN", "hvs." + r(B64URL, 95)),
    ("Vault batch token", "vault-token", "VAULT_BATCH_TOKEN", "hvb." + r(B64URL, 140)),
    ("Doppler personal token", "doppler-token", "DOPPLER_TOKEN", "dp.pt." + r(ALNUM, 43)),
    ("Doppler service token", "doppler-token", "DOPPLER_TOKEN", "dp.st.prd." + r(ALNUM, 43)),
    ("Pulumi token", "pulumi-token", "PULUMI_ACCESS_TOKEN", "pul-" + r(HEX, 40)),
    ("Harness PAT", "harness-key", "HARNESS_API_KEY", "pat." + r(B64URL, 22) + "." + r(ALNUM, 24) + "." + r(ALNUM, 20)),
    ("Infracost token", "infracost-token", "INFRACOST_API_KEY", "ico-" + r(ALNUM, 32)),
    ("OpenShift token", "openshift-token", "OC_TOKEN", "sha256~" + r(B64URL, 43)),
    ("Defined Networking key", "defined-networking-token", "DN_API_KEY", "dnkey-" + r(UPNUM, 26) + "-" + r(UPNUM, 52)),
    ("GitHub classic PAT", "github-token", "GITHUB_TOKEN", "ghp_" + r(ALNUM, 36)),
    ("GitHub OAuth token", "github-token", "GH_TOKEN", "gho_" + r(ALNUM, 36)),
    ("GitHub app token", "github-token", "GITHUB_APP_TOKEN", "ghs_" + r(ALNUM, 36)),
    ("GitHub refresh token", "github-token", "GITHUB_REFRESH", "ghr_" + r(ALNUM, 76)),
    ("GitHub fine-grained PAT", "github-token", "GITHUB_PAT", "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59)),
    ("GitLab PAT", "gitlab-token", "GITLAB_TOKEN", "glpat-" + r(B64URL, 20)),
    ("GitLab routable PAT", "gitlab-token", "GITLAB_TOKEN", "glpat-" + r(B64URL, 36) + ".01." + r(LONUM, 9)),
    ("GitLab deploy token", "gitlab-token", "CI_DEPLOY_PASSWORD", "gldt-" + r(B64URL, 20)),
    ("GitLab runner token", "gitlab-token", "RUNNER_TOKEN", "glrt-" + r(B64URL, 20)),
    ("GitLab pipeline trigger token", "gitlab-token", "TRIGGER_TOKEN", "glptt-" + r(HEX, 40)),
    ("GitLab agent token", "gitlab-token", "KAS_TOKEN", "glagent-" + r(B64URL, 50)),
    ("GitLab runner registration token", "gitlab-token", "REGISTRATION_TOKEN", "GR1348941" + r(B64URL, 20)),
    ("npm token", "npm-token", "NPM_TOKEN", "npm_" + r(ALNUM, 36)),
    ("PyPI upload token", "pypi-token", "TWINE_PASSWORD", "pypi-AgEIcHlwaS5vcmc" + r(B64URL, 150)),
    ("TestPyPI token", "pypi-token", "TEST_PYPI_TOKEN", "pypi-AgENdGVzdC5weXBpLm9yZw" + r(B64URL, 120)),
    ("RubyGems key", "rubygems-token", "GEM_HOST_API_KEY", "rubygems_" + r(HEX, 48)),
    ("Clojars token", "clojars-token", "CLOJARS_TOKEN", "CLOJARS_" + r(LONUM, 60)),
    ("Docker Hub PAT", "docker-token", "DOCKERHUB_TOKEN", "dckr_pat_" + r(B64URL, 27)),
    ("Docker org access token", "docker-token", "DOCKER_OAT", "dckr_oat_" + r(B64URL, 32)),
    ("Artifactory API key", "artifactory-key", "ARTIFACTORY_API_KEY", "AKCp" + r(ALNUM, 69)),
    ("Artifactory reference token", "artifactory-key", "JFROG_ACCESS_TOKEN", "cmVmd" + r(ALNUM, 59)),
    ("Buildkite token", "buildkite-token", "BUILDKITE_API_TOKEN", "bkua_" + r(HEX, 40)),
    ("CircleCI PAT", "circleci-token", "CIRCLE_TOKEN", "CCIPAT_" + r(ALNUM, 22) + "_" + r(HEX, 40)),
    ("Prefect key", "prefect-key", "PREFECT_API_KEY", "pnu_" + r(ALNUM, 36)),
    ("ReadMe key", "readme-key", "README_API_KEY", "rdme_" + r(LONUM, 70)),
    ("Postman key", "postman-key", "POSTMAN_API_KEY", "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34)),
    ("Sentry org token", "sentry-token", "SENTRY_AUTH_TOKEN", "sntrys_eyJpYXQiOjE3MDAwMDAwMDAuMCwidXJsIjoi" + r(ALNUM, 80) + "_" + r(ALNUM, 43)),
    ("Sentry user token", "sentry-token", "SENTRY_TOKEN", "sntryu_" + r(HEX, 64)),
    ("Grafana service account token", "grafana-token", "GRAFANA_TOKEN", "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8)),
    ("Grafana Cloud token", "grafana-token", "GRAFANA_CLOUD_TOKEN", "glc_" + r(ALNUM, 120) + "=="),
    ("Grafana API key", "grafana-token", "GRAFANA_API_KEY", "eyJrIjoi" + r(ALNUM, 80)),
    ("New Relic user key", "newrelic-key", "NEW_RELIC_API_KEY", "NRAK-" + r(UPNUM, 27)),
    ("New Relic insert key", "newrelic-key", "NEW_RELIC_INSERT_KEY", "NRII-" + r(B64URL, 32)),
    ("Sourcegraph token", "sourcegraph-token", "SRC_ACCESS_TOKEN", "sgp_" + r(HEX, 16) + "_" + r(HEX, 40)),
    ("Octopus Deploy key", "octopus-key", "OCTOPUS_API_KEY", "API-" + r(UPNUM, 26)),
    ("SettleMint token", "settlemint-token", "SETTLEMINT_TOKEN", "sm_pat_" + r(ALNUM, 16)),
    ("Linear API key", "linear-key", "LINEAR_API_KEY", "lin_api_" + r(ALNUM, 40)),
    ("Atlassian API token", "atlassian-token", "JIRA_API_TOKEN", "ATATT3xFfGF0" + r(B64URL, 170) + "=" + r(UPNUM, 8)),
    ("Notion token", "notion-token", "NOTION_TOKEN", "ntn_" + r(DIG, 11) + r(ALNUM, 35)),
    ("Notion integration secret", "notion-token", "NOTION_KEY", "secret_" + r(ALNUM, 43)),
    ("Figma token", "figma-token", "FIGMA_TOKEN", "figd_" + r(B64URL, 40)),
    ("Typeform token", "typeform-token", "TYPEFORM_TOKEN", "tfp_" + r(ALNUM, 59)),
    ("Airtable PAT", "airtable-token", "AIRTABLE_API_KEY", "pat" + r(ALNUM, 14) + "." + r(HEX, 64)),
    ("1Password service account token", "1password-token", "OP_SERVICE_ACCOUNT_TOKEN", "ops_eyJ" + r(ALNUM + "+/", 300)),
    ("1Password secret key", "1password-secret-key", "OP_SECRET_KEY", f"A3-{r(UPNUM, 6)}-{r(UPNUM, 6)}-{r(UPNUM, 5)}-{r(UPNUM, 5)}-{r(UPNUM, 5)}-{r(UPNUM, 5)}"),
    ("age secret key", "age-secret-key", "SOPS_AGE_KEY", "AGE-SECRET-KEY-1" + r(BECH32, 58)),
    ("Adobe client secret", "adobe-secret", "ADOBE_CLIENT_SECRET", "p8e-" + r(ALNUM, 32)),
    ("MaxMind license key", "maxmind-key", "MAXMIND_LICENSE_KEY", r(ALNUM, 6) + "_" + r(ALNUM, 29) + "_mmk"),
    ("Slack bot token", "slack-token", "SLACK_BOT_TOKEN", f"xoxb-{r(DIG, 12)}-{r(DIG, 13)}-{r(ALNUM, 24)}"),
    ("Slack user token", "slack-token", "SLACK_USER_TOKEN", f"xoxp-{r(DIG, 12)}-{r(DIG, 12)}-{r(DIG, 13)}-{r(HEX, 32)}"),
    ("Slack app token", "slack-token", "SLACK_APP_TOKEN", f"xapp-1-A{r(UPNUM, 10)}-{r(DIG, 13)}-{r(HEX, 64)}"),
    ("Slack config token", "slack-token", "SLACK_CONFIG_TOKEN", "xoxe.xoxp-1-" + r(ALNUM, 164)),
    ("Slack webhook", "slack-webhook", "SLACK_WEBHOOK_URL", f"https://hooks.slack.com/services/T{r(UPNUM, 8)}/B{r(UPNUM, 10)}/{r(ALNUM, 24)}"),
    ("Discord webhook", "discord-webhook", "DISCORD_WEBHOOK", f"https://discord.com/api/webhooks/{r(DIG, 18)}/{r(B64URL, 68)}"),
    ("Telegram bot token", "telegram-bot-token", "TELEGRAM_BOT_TOKEN", f"{r(DIG, 10)}:AA{r(B64URL, 33)}"),
    ("SendGrid key", "sendgrid-key", "SENDGRID_API_KEY", "SG." + r(B64URL, 22) + "." + r(B64URL, 43)),
    ("Brevo (Sendinblue) key", "sendinblue-key", "BREVO_API_KEY", "xkeysib-" + r(HEX, 64) + "-" + r(ALNUM, 16)),
    ("Mailgun key", "mailgun-key", "MAILGUN_API_KEY", "key-" + r(HEX, 32)),
    ("Mailchimp key", "mailchimp-key", "MAILCHIMP_API_KEY", r(HEX, 32) + "-us21"),
    ("Resend key", "resend-key", "RESEND_API_KEY", "re_" + r(ALNUM, 8) + "_" + r(ALNUM, 24)),
    ("Twilio API key", "twilio-key", "TWILIO_API_KEY", "SK" + r(HEX, 32)),
    ("Stripe secret key", "stripe-key", "STRIPE_SECRET_KEY", "sk_live_" + r(ALNUM, 99)),
    ("Stripe restricted key", "stripe-key", "STRIPE_KEY", "rk_test_" + r(ALNUM, 99)),
    ("Stripe webhook secret", "stripe-webhook-secret", "STRIPE_WEBHOOK_SECRET", "whsec_" + r(ALNUM, 32)),
    ("Square access token", "square-token", "SQUARE_ACCESS_TOKEN", "EAAA" + r(B64URL, 60)),
    ("Square OAuth secret", "square-token", "SQUARE_APP_SECRET", "sq0csp-" + r(B64URL, 43)),
    ("Facebook page token", "facebook-token", "FB_PAGE_TOKEN", "EAAC" + r(ALNUM, 160)),
    ("Shopify access token", "shopify-token", "SHOPIFY_ACCESS_TOKEN", "shpat_" + r(HEX, 32)),
    ("Shopify shared secret", "shopify-token", "SHOPIFY_API_SECRET", "shpss_" + r(HEX, 32)),
    ("Shippo token", "shippo-token", "SHIPPO_TOKEN", "shippo_live_" + r(HEX, 40)),
    ("Duffel token", "duffel-token", "DUFFEL_TOKEN", "duffel_test_" + r(B64URL, 43)),
    ("EasyPost key", "easypost-key", "EASYPOST_API_KEY", "EZAK" + r(ALNUM, 54)),
    ("Flutterwave secret", "flutterwave-key", "FLW_SECRET_KEY", "FLWSECK_TEST-" + r(HEX, 32) + "-X"),
    ("Frame.io token", "frameio-token", "FRAMEIO_TOKEN", "fio-u-" + r(B64URL, 64)),
    ("Mapbox secret token", "mapbox-token", "MAPBOX_SECRET_TOKEN", "sk.eyJ1IjoiYWNtZSIsImEiOiJ" + r(ALNUM, 20) + "." + r(B64URL, 22)),
    ("JWT", "jwt", "SESSION_JWT", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + b64(json.dumps({"sub": r(DIG, 10), "iat": 1764480000}).encode()).rstrip("=") + "." + r(B64URL, 43)),
]


def _ctx(name: str, value: str, kind: str | None, prose: str, env: str, data: str, shell: str) -> Format:
    return Format(name, value, kind, tuple(t.replace("{v}", value) for t in (prose, env, data, shell)))


def _ctx_formats() -> list[Format]:
    aws_secret = r(ALNUM + "/+", 40)
    vault_short = "hvs.CAES" + r(ALNUM, 6)
    pg = r(ALNUM, 20)
    docker_auth = b64(f"dana:{r(ALNUM, 18)}".encode())
    kube_key = b64(pem("RSA PRIVATE KEY").encode())
    sas = r(ALNUM, 30) + "%2B" + r(ALNUM, 10) + "%3D"
    account_key = b64(rng.randbytes(64))
    x_api = r(ALNUM, 32)
    curl_pw = r(ALNUM, 16)
    db_pw = r(ALNUM + "!@#%^&*", 20)
    basic = b64(f"ops:{r(ALNUM, 16)}".encode())
    bearer = r(ALNUM + "-._~", 48)
    generic = r(ALNUM, 40)
    cloudflare = r(B64URL, 40)
    datadog = r(HEX, 32)
    ssh = pem("OPENSSH PRIVATE KEY")
    return [
        _ctx("AWS secret access key", aws_secret, "aws-secret",
             "AWS access key AKIAZ7PQ4RSTUVWXY2AB, secret access key {v} for the staging account.\n",
             "AWS_ACCESS_KEY_ID=AKIAZ7PQ4RSTUVWXY2AB\nAWS_SECRET_ACCESS_KEY={v}\n",
             '{"AccessKeyId": "AKIAZ7PQ4RSTUVWXY2AB", "SecretAccessKey": "{v}"}\n',
             "$ aws configure set aws_secret_access_key {v} --profile staging\n"),
        _ctx("Vault token, short", vault_short, None,
             "I ran export VAULT_TOKEN={v} and vault status worked.\n",
             "export VAULT_TOKEN={v}\nexport VAULT_ADDR=https://vault.example.com\n",
             "vault:\n  address: https://vault.example.com\n  token: {v}\n",
             "$ VAULT_TOKEN={v} vault kv get secret/app\n"),
        _ctx("Postgres password in a URL", pg, "connection-password",
             "connect with postgres://orders_app:{v}@db.internal:5432/orders and run the migration.\n",
             "DATABASE_URL=postgres://orders_app:{v}@db.internal:5432/orders\n",
             '{"database": {"url": "postgresql://orders_app:{v}@db.internal/orders"}}\n',
             "$ psql 'postgresql://orders_app:{v}@db.internal:5432/orders' -c 'select 1'\n"),
        _ctx("Docker config.json auth", docker_auth, "docker-auth",
             'My ~/.docker/config.json has "auth": "{v}" under ghcr.io, is that right?\n',
             'DOCKER_AUTH_CONFIG={"auths":{"ghcr.io":{"auth":"{v}"}}}\n',
             '{\n  "auths": {\n    "https://index.docker.io/v1/": {\n      "auth": "{v}"\n    }\n  }\n}\n',
             "$ echo '{\"auths\":{\"ghcr.io\":{\"auth\":\"{v}\"}}}' > ~/.docker/config.json\n"),
        _ctx("kubeconfig client-key-data", kube_key, "private-key",
             "the kubeconfig user has client-key-data {v} and the cert next to it.\n",
             "KUBE_CLIENT_KEY_DATA={v}\n",
             "users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n    client-key-data: {v}\n",
             "$ kubectl config set users.admin.client-key-data {v}\n"),
        _ctx("Azure SAS signature", sas, "azure-sas",
             "The blob link https://acme.blob.core.windows.net/exports/q3.csv?sv=2022-11-02&ss=b&sp=r&se=2026-12-01T00:00:00Z&sig={v} expires Monday.\n",
             "EXPORT_URL=https://acme.blob.core.windows.net/exports?sv=2022-11-02&sr=c&sp=rl&sig={v}\n",
             '{"sasUrl": "https://acme.blob.core.windows.net/c?sv=2022-11-02&sr=c&sig={v}&se=2026-12-01"}\n',
             "$ azcopy copy 'https://acme.blob.core.windows.net/c/f.csv?sv=2022-11-02&sp=r&sig={v}' .\n"),
        _ctx("Azure storage account key", account_key, None,
             "Connection string: DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={v};EndpointSuffix=core.windows.net\n",
             "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={v};EndpointSuffix=core.windows.net\n",
             '{"storage": {"accountName": "acme", "accountKey": "{v}"}}\n',
             "$ az storage blob list --account-name acme --account-key {v} -c exports\n"),
        _ctx("X-Api-Key header", x_api, None,
             "Call it with the header X-Api-Key: {v} and it answers 200.\n",
             "SEARCH_API_KEY={v}\n",
             'headers:\n  X-Api-Key: {v}\n  Accept: application/json\n',
             "$ curl -H 'X-Api-Key: {v}' https://search.example.com/v1/q?term=x\n"),
        _ctx("curl basic credentials", curl_pw, "password",
             "this worked: curl -u admin:{v} https://jenkins.example.com/api/json\n",
             "JENKINS_PASSWORD={v}\n",
             '{"jenkins": {"user": "admin", "password": "{v}"}}\n',
             "$ curl -sS -u admin:{v} https://jenkins.example.com/api/json | jq .jobs\n"),
        _ctx("database password", db_pw, "password",
             "The DB password: {v}\n",
             "DB_PASSWORD='{v}'\n",
             "database:\n  user: app\n  password: '{v}'\n",
             "$ mysql --user=root --password='{v}' inventory\n"),
        _ctx("HTTP basic auth header", basic, "bearer",
             "The proxy wants Authorization: Basic {v} on every request.\n",
             "PROXY_AUTH_HEADER=\"Authorization: Basic {v}\"\n",
             '{"headers": {"Authorization": "Basic {v}"}}\n',
             "$ curl -H 'Authorization: Basic {v}' https://intranet.example.com/\n"),
        _ctx("Bearer token", bearer, "bearer",
             "use Bearer {v} when you call the admin API\n",
             "ADMIN_AUTH=\"Bearer {v}\"\n",
             "headers:\n  Authorization: Bearer {v}\n",
             "$ curl -H \"Authorization: Bearer {v}\" https://api.example.com/v2/me\n"),
        _ctx("generic API key", generic, None,
             "The api key is {v} and it has read scope only.\n",
             "PARTNER_API_KEY={v}\n",
             '{"partner": {"apiKey": "{v}"}}\n',
             "$ ./sync --api-key {v} --dry-run\n"),
        _ctx("Cloudflare API token", cloudflare, None,
             "Cloudflare token {v} can edit DNS for example.com.\n",
             "CLOUDFLARE_API_TOKEN={v}\n",
             "cloudflare:\n  api_token: {v}\n",
             "$ curl https://api.cloudflare.com/client/v4/user/tokens/verify -H 'Authorization: Bearer {v}'\n"),
        _ctx("Datadog API key", datadog, None,
             "datadog api key: {v}\n",
             "DD_API_KEY={v}\n",
             '{"datadog": {"api_key": "{v}", "site": "datadoghq.eu"}}\n',
             "$ DD_API_KEY={v} datadog-agent run\n"),
        _ctx("OpenSSH private key", ssh, "private-key",
             "Here is the deploy key:\n{v}\nadd it to ~/.ssh/deploy and chmod 600 it.\n",
             "DEPLOY_KEY=\"{v}\"\n",
             json.dumps({"deploy_key": "{v}"}).replace("{v}", ssh.replace("\n", "\\n")) + "\n",
             "$ cat > ~/.ssh/deploy <<'EOF'\n{v}EOF\n"),
    ]


FORMATS: list[Format] = [_token(i, *t) for i, t in enumerate(TOKENS)] + _ctx_formats()
RENDERINGS = ("prose", "env", "data", "shell")


def cases() -> list[tuple[Format, str, str]]:
    """(format, rendering name, text) for every format and rendering."""
    return [(f, RENDERINGS[i], text) for f in FORMATS for i, text in enumerate(f.renderings)]


def leaked(value: str, out: str) -> bool:
    """True if the secret, or a telling piece of it, is still in out. The JSON
    rendering of a PEM escapes its newlines, so each of its lines is a piece."""
    pieces = [value] + [ln for ln in value.splitlines() if len(ln) >= 20]
    tail = value[-12:] if "\n" not in value else ""
    return any(p in out or p.replace("\n", "\\n") in out for p in pieces) or (bool(tail) and tail in out)


# --- non-secrets: what a coding session is full of, which must come through unchanged

def _sha1() -> str:
    return hashlib.sha1(rng.randbytes(20)).hexdigest()


def _sha256() -> str:
    return hashlib.sha256(rng.randbytes(32)).hexdigest()


def _png_b64() -> str:
    # a PNG's signature and header, then a compressed body with runs of zeros
    raw = bytes(rng.choice([0, 0, 0, rng.randrange(256)]) for _ in range(600))
    body = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + rng.randbytes(13) + zlib.compress(raw)
    return b64(body + bytes(40))


def _ver() -> str:
    return f"{rng.randrange(0, 20)}.{rng.randrange(0, 40)}.{rng.randrange(0, 30)}"


def non_secrets() -> list[str]:
    out: list[str] = []
    for _ in range(15):
        sha = _sha1()
        out += [
            f"commit {sha}\nAuthor: Dana Ruiz <dana@example.com>\nDate:   Mon Nov 30 06:12:44 2026\n",
            f"HEAD is now at {sha[:7]} fix: retry the token refresh once",
            f"Merge: {sha[:7]} {_sha1()[:7]}\nfixed in https://github.com/acme/api/commit/{sha}",
        ]
    for _ in range(10):
        u = str(uuid.UUID(bytes=rng.randbytes(16), version=4))
        out += [
            f"2026-11-30T06:00:00Z INFO request_id={u} status=200 duration_ms=42",
            f'{{"id": "{u}", "type": "session", "auth_method": "oauth"}}',
            f"Idempotency key {u} was reused; the API returned 409.",
        ]
    for _ in range(10):
        h = _sha256()
        out += [
            f"image: registry.example.com/api@sha256:{h}",
            f"{h}  cardmem-0.1.0-py3-none-any.whl",
            f"Cache restored from key: node-cache-Linux-x64-npm-{h}",
        ]
    for _ in range(5):
        digest = b64(hashlib.sha512(rng.randbytes(8)).digest())
        out.append(f'"integrity": "sha512-{digest}",')
    for _ in range(20):
        img = _png_b64()
        out.append(rng.choice([
            f"![diagram](data:image/png;base64,{img})",
            f'{{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "{img}"}}}}',
            f'<img alt="key figure" src="data:image/png;base64,{img}">',
        ]))
    for _ in range(8):
        v = _ver()
        out += [
            f"Bumped version to {v} and tagged v{v}.",
            f"numpy=={v}\nrequests>={v}\nmypy~={v}",
            f'{{"name": "@acme/ui", "version": "{v}-rc.{rng.randrange(1, 9)}", "private": true}}',
        ]
    out += [
        "open src/auth/password_reset.py and tests/test_token_bucket.py",
        "/home/dana/projects/api/src/auth/token_store.py:142: in refresh_token",
        "ls ~/.ssh/id_ed25519.pub ~/.aws/credentials /etc/ssl/private/server.key",
        "src/components/KeyboardShortcuts.tsx(12,5): error TS2322",
        "C:\\Users\\Dana\\AppData\\Local\\Programs\\Python\\Python312\\python.exe",
        "the key file is at /var/lib/acme/keys/signing_key.pem (mode 0600)",
        "secrets live in /run/secrets/db_password, mounted by compose",
        "see docs/architecture/authentication-and-authorization.md",
        "node_modules/.pnpm/@babel+core@7.24.0/node_modules/@babel/core/lib/index.js",
        "~/.cache/huggingface/hub/models--bert-base-uncased/snapshots/",
        "max_tokens = 1024\ntoken_count: 512\ninput_tokens=93 output_tokens=25",
        "class TokenBucketRateLimiter:\n    def acquire(self, tokens: int = 1) -> bool:",
        "def get_api_key_from_env(name: str = 'OPENAI_API_KEY') -> str | None:",
        "passwordResetTokenExpiry = 3600  # seconds",
        "AUTH_PROVIDER_DEFAULT = 'github'\nSECRET_KEY_FALLBACKS = []",
        "keyboardEventHandlerRegistry.register('ctrl+k', openCommandPalette)",
        "token: ${{ secrets.GITHUB_TOKEN }}\napi-key: ${{ secrets.API_KEY }}",
        "password = os.environ['DB_PASSWORD']\ntoken = os.getenv('GITHUB_TOKEN')",
        "api_key = settings.OPENAI_API_KEY\nsecret_key = self.config.secret_key",
        "The secret sauce is the retry policy; the API key rotation job runs nightly.",
        "Use basic auth for the intranet and a bearer token for the public API.",
        "auth: required\nauth_type: oauth2\ntoken_endpoint: https://auth.example.com/oauth/token",
        "the tokenizer is bert-base-multilingual-cased-finetuned-conll03",
        "key_prefix: user-session-cache-namespace-v2",
        "primary key (tenant_id, created_at_bucket_week_number)",
        "sort key: lastModifiedTimestampMillis; partition key: tenantIdentifier",
        "foreign key constraint fk_orders_customer_id_customers failed",
        "press the Tab key twice; the Escape key closes the dialog",
        "credentials: include\nmode: cors\ncache: no-store",
        "The auth middleware rejected the request because the session expired.",
        "Token usage: 1532 input, 201 output (cache hits: 1024)",
        "jobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4",
        "ERROR KeyError: 'access_token' in oauth_callback (views.py:88)",
        "SKU-1234 shipped; port 5432; 0xdeadbeef; PID 48213",
        "--password-stdin < pass.txt; docker login --username dana --password-stdin",
        "git clone git@github.com:acme/api.git && cd api && make test",
        "DATABASE_URL=postgres://localhost:5432/orders (no credentials locally)",
        "visit https://example.com:8443/path?query=1&page=2#frag",
        "ghp_ tokens are classic, github_pat_ ones are fine-grained",
        "TOKEN_TTL_SECONDS=3600\nPASSWORD_MIN_LENGTH=12\nAPI_KEY_HEADER=X-Api-Key",
        "the signing key id is kid-2026-11 and rotates quarterly",
        "export PATH=$HOME/.local/bin:$PATH && export PYTHONPATH=src",
        "pytest tests/tools/secrets/test_redact.py::test_token_is_removed_in_every_context -x",
        "eslint --rule 'no-unused-vars: error' src/auth/AuthTokenProvider.tsx",
        "AuthorizationServerMetadataDiscoveryClient.fetch()",
        "secretsmanager:GetSecretValue on arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db",
        "arn:aws:iam::123456789012:role/github-actions-deploy-role",
        "the passkey flow uses WebAuthn; no password at all",
        "Signed-off-by: Dana Ruiz <dana@example.com>\nChange-Id: I8473b95934b5732ac55d26311a706c9c2bde9940",
    ]
    return out
