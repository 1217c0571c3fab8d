"""Failure notifications on a Prefect server: a notification block and an automation that sends it when a run of
a caseforge deployment (the scheduled nightly first among them) ends Failed, Crashed or TimedOut. The message
names the flow, the deployment and the run, carries the run's state message (the nightly's names its failed
stages: "nightly 7: 3 stage(s) failed (source guides, source hudoc, source oyez), ...") and links the run in
the UI.

deployments/setup.sh runs `python -m caseforge.runtime.notifications` against PREFECT_API_URL. Where the message
goes comes from the environment:

- CASEFORGE_NOTIFY_URL: a Slack incoming webhook (https://hooks.slack.com/services/...), a Microsoft Teams
  workflow URL (*.logic.azure.com, *.powerplatform.com, *.webhook.office.com), e-mail through SendGrid
  (sendgrid://API_KEY:from_name@from_domain/to@domain[/to2@domain]), or any other http(s) URL, which gets a
  POST of JSON {"subject", "body", "text"}; caseforge saves it as the block `caseforge-failures`;
- CASEFORGE_NOTIFY_BLOCK: instead, a notification block made in the UI, as `<block type slug>/<block name>`
  (`slack-webhook/ops`, any e-mail or paging block).

With neither, nothing is created, and it says so. Run again, it replaces the block and updates the automation.

Which runs: those of deployments tagged NOTIFY_TAG (deployments/prefect.yaml tags `nightly` and
`oyez-nightly`; tag another deployment to add it). A run started from the command line is watched by the
person who started it; a subflow (a source inside the nightly) reports through its nightly, so a failing
nightly sends one message.
"""
from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from urllib.parse import unquote, urlsplit

from caseforge.settings import load_settings

NOTIFY_URL_ENV = "CASEFORGE_NOTIFY_URL"
NOTIFY_BLOCK_ENV = "CASEFORGE_NOTIFY_BLOCK"
NOTIFY_TAG = "notify-failures"
BLOCK_NAME = "caseforge-failures"
AUTOMATION_NAME = "caseforge: a deployment's run failed"
FAILED_EVENTS = ("prefect.flow-run.Failed", "prefect.flow-run.Crashed", "prefect.flow-run.TimedOut")
TEAMS_HOSTS = (".logic.azure.com", ".powerplatform.com", ".webhook.office.com")

SUBJECT = "caseforge: {{ flow.name }} run {{ flow_run.name }} {{ flow_run.state.name }}"
BODY = (
    "{{ flow.name }}{% if deployment %} (deployment {{ deployment.name }}){% endif %} run {{ flow_run.name }} "
    "ended {{ flow_run.state.name }}.\n\n"
    "{{ flow_run.state.message }}\n\n"
    "{% set link = flow_run|ui_url %}"
    "{% if link %}{{ link }}{% else %}flow run {{ flow_run.id }} (no link: the server has neither PREFECT_UI_URL "
    "nor PREFECT_API_URL){% endif %}"
)


def notification_block(url: str):
    """(the Prefect notification block for `url`, what to call it in a message that must not show a secret)."""
    from prefect.blocks.notifications import (CustomWebhookNotificationBlock, MicrosoftTeamsWebhook, SendgridEmail,
                                              SlackWebhook)

    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme == "sendgrid":
        recipients = [unquote(p) for p in parts.path.split("/") if p]
        if not (parts.username and parts.password and host and recipients):
            raise ValueError(f"{NOTIFY_URL_ENV}: an e-mail URL is sendgrid://API_KEY:from_name@from_domain/to@domain")
        return (SendgridEmail(api_key=unquote(parts.username), sender_email=f"{unquote(parts.password)}@{host}",
                              to_emails=recipients, notify_type="failure"),
                f"e-mail through SendGrid to {', '.join(recipients)}")
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError(f"{NOTIFY_URL_ENV} must be an http(s) webhook URL or sendgrid://..., not {parts.scheme or url!r}")
    if host in ("hooks.slack.com", "hooks.slack-gov.com"):
        return SlackWebhook(url=url, notify_type="failure"), f"Slack webhook at {host}"
    if host.endswith(TEAMS_HOSTS):
        return MicrosoftTeamsWebhook(url=url, notify_type="failure"), f"Microsoft Teams workflow at {host}"
    block = CustomWebhookNotificationBlock(
        name=BLOCK_NAME, url=url,
        json_data={"subject": "{{subject}}", "body": "{{body}}", "text": "{{subject}}\n\n{{body}}"})
    return block, f"webhook at {parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def failure_automation(block_document_id):
    """The automation: each Failed, Crashed or TimedOut run of a deployment tagged NOTIFY_TAG, one message."""
    from prefect.automations import Automation, EventTrigger, Posture, SendNotification

    return Automation(
        name=AUTOMATION_NAME,
        description=f"Sends the block {BLOCK_NAME} (or {NOTIFY_BLOCK_ENV}'s) when a run of a deployment tagged "
                    f"{NOTIFY_TAG} ends Failed, Crashed or TimedOut; made by deployments/setup.sh",
        trigger=EventTrigger(
            expect=set(FAILED_EVENTS),
            match={"prefect.resource.id": "prefect.flow-run.*"},
            # a deployment's own run (a subflow has no deployment), of a deployment tagged for it
            match_related=[{"prefect.resource.role": "deployment"},
                           {"prefect.resource.id": f"prefect.tag.{NOTIFY_TAG}", "prefect.resource.role": "tag"}],
            posture=Posture.Reactive, threshold=1, within=timedelta(0)),
        actions=[SendNotification(block_document_id=block_document_id, subject=SUBJECT, body=BODY)],
    )


def save_automation(wanted) -> str:
    """Create the automation, or update the one of the same name: "created" or "updated"."""
    from prefect.automations import Automation

    try:
        existing = Automation.read(name=wanted.name)
    except ValueError:
        wanted.create()
        return "created"
    wanted.id = existing.id
    wanted.update()
    return "updated"


def install(url: str | None, block_slug: str | None) -> list[str]:
    """Save the block (or find the named one) and create or update the automation; what was done, in lines."""
    from prefect.blocks.core import Block

    if block_slug:
        block = Block.load(block_slug)
        if "notify" not in block.get_block_capabilities():
            raise ValueError(f"{NOTIFY_BLOCK_ENV}={block_slug} is not a notification block")
        block_id, where = block._block_document_id, f"the block {block_slug}"
    else:
        block, where = notification_block(url)
        block_id = block.save(BLOCK_NAME, overwrite=True)
        where = f"{where} (block {block.get_block_type_slug()}/{BLOCK_NAME})"
    done = save_automation(failure_automation(block_id))
    return [f"failure notifications: {where}",
            f"automation {AUTOMATION_NAME!r} {done}: runs of deployments tagged {NOTIFY_TAG} that end Failed, "
            "Crashed or TimedOut send one message naming the run, its state message and a link"]


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m caseforge.runtime.notifications", description=__doc__.split("\n\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    settings = load_settings()
    url, block_slug = settings.notify_url.strip(), settings.notify_block.strip()
    if not url and not block_slug:
        print(f"failure notifications: none ({NOTIFY_URL_ENV} and {NOTIFY_BLOCK_ENV} are not set; set one and run "
              "deployments/setup.sh again)")
        return 0
    try:
        lines = install(url or None, block_slug or None)
    except (ValueError, KeyError) as exc:
        print(f"failure notifications: not set up: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
