"""deployments/ agrees with itself, with the settings and with the lock files: the pools prefect.yaml names are
the pools setup.sh creates, the fan-out's default deployment is the llm-shard deployment on the GPU pool, and
the worker packages of the `workers` extra are pinned on top of requirements.lock without contradicting it."""
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from caseforge.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOYMENTS = ROOT / "deployments"


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            found[re.sub(r"[-_.]+", "-", name.lower())] = version
    return found


def test_every_pool_prefect_yaml_names_is_created_by_setup_sh():
    config = yaml.safe_load((DEPLOYMENTS / "prefect.yaml").read_text())
    named = {d["work_pool"]["name"] for d in config["deployments"]}
    created = set(re.findall(r"^pool (\S+)", (DEPLOYMENTS / "setup.sh").read_text(), re.M))
    assert named == created == {"caseforge-cpu", "caseforge-gpu"}
    assert "caseforge-gpu" in (DEPLOYMENTS / "gpu" / "Dockerfile").read_text()
    assert sorted(p.name for p in DEPLOYMENTS.rglob("*.yaml")) == ["k8s-job-template.yaml", "prefect.yaml"]


def test_the_gpu_image_copies_every_folder_setup_py_installs():
    """The image installs caseforge from its own copy of the checkout: a folder linked into caseforge/ (a floor such
    as runtime/, installed as caseforge.runtime: setup.py) that it does not copy leaves the image without that
    subpackage."""
    mapped = {link.name for link in (ROOT / "caseforge").iterdir() if link.is_symlink()}
    copied = set(re.findall(r"^COPY (\w+) \./\1$", (DEPLOYMENTS / "gpu" / "Dockerfile").read_text(), re.M))
    assert mapped >= {"cli", "flows", "runtime", "tasks"} and mapped | {"caseforge"} <= copied, (mapped, copied)


def test_the_fanout_default_deployment_is_the_llm_shard_flow_on_the_gpu_pool():
    from caseforge.flows.llm_shard import llm_shard_flow

    fanout = load_settings().file.fanout
    flow_name, deployment_name = fanout.deployment.split("/")
    config = yaml.safe_load((DEPLOYMENTS / "prefect.yaml").read_text())
    deployment = next(d for d in config["deployments"] if d["name"] == deployment_name)
    # the flow of the worker's own installed caseforge, wherever its checkout is: no folder to pull into
    assert deployment["entrypoint"] == "caseforge.flows.llm_shard.llm_shard_flow" and llm_shard_flow.name == flow_name
    assert deployment["pull"] == [] and "/opt/caseforge" not in (DEPLOYMENTS / "prefect.yaml").read_text()
    assert deployment["work_pool"]["name"] == "caseforge-gpu"
    job = deployment["work_pool"]["job_variables"]
    assert job["volumes"] == ["{{ $CASEFORGE_MODELS_DIR }}:/models:ro"]          # no shard folder
    assert int(job["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"]) == fanout.heartbeat_s
    assert fanout.stale_after_s >= 3 * fanout.heartbeat_s


def test_the_kubernetes_job_template_has_no_shard_volume_and_reads_the_store_credentials_from_a_secret():
    template = yaml.safe_load((DEPLOYMENTS / "gpu" / "k8s-job-template.yaml").read_text())
    pod = template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]
    assert [v["name"] for v in pod["volumes"]] == ["models", "dshm"]
    assert pod["containers"][0]["envFrom"] == [{"secretRef": {"name": "{{ store_secret }}"}}]
    assert "shards_claim" not in template["variables"]["properties"]


def test_the_kubernetes_job_template_puts_the_store_url_into_the_pods_environment():
    """The job variable `store` reaches the container as CASEFORGE_FANOUT_STORE (what caseforge.llm.worker reads),
    filled in by Prefect's own templating (what a worker does with the pool's template and a run's variables)."""
    from prefect.utilities.templating import apply_values

    from caseforge.settings import variables_of

    [STORE_ENV] = variables_of("fanout_store")

    template = yaml.safe_load((DEPLOYMENTS / "gpu" / "k8s-job-template.yaml").read_text())
    variables = template["variables"]["properties"]
    assert variables["store"]["type"] == "string" and variables["store"]["default"] == ""
    values = {**{name: spec["default"] for name, spec in variables.items() if "default" in spec},
              "store": "s3://caseforge-shards/prod", "env": {"HF_HUB_OFFLINE": "1"}}
    rendered = apply_values(template["job_configuration"], values)
    container = rendered["job_manifest"]["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [{"name": STORE_ENV, "value": "s3://caseforge-shards/prod"}]
    assert container["envFrom"] == [{"secretRef": {"name": "caseforge-store"}}]
    assert rendered["env"] == {"HF_HUB_OFFLINE": "1"}    # the run's own environment, which the worker adds to the list
    try:
        from prefect_kubernetes.worker import KubernetesWorkerJobConfiguration
    except ImportError:          # without the `workers` extra (make setup-workers), Prefect's part is all there is
        return
    configuration = KubernetesWorkerJobConfiguration.model_validate(rendered)
    configuration._populate_env_in_manifest()
    env = configuration.job_manifest["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": STORE_ENV, "value": "s3://caseforge-shards/prod"} in env
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in env


def test_setup_sh_gives_the_kubernetes_pool_the_store_of_its_environment(monkeypatch):
    from caseforge.runtime.server_setup import base_job_template

    path = str(DEPLOYMENTS / "gpu" / "k8s-job-template.yaml")
    monkeypatch.delenv("CASEFORGE_FANOUT_STORE", raising=False)
    assert base_job_template(path)["variables"]["properties"]["store"]["default"] == ""
    monkeypatch.setenv("CASEFORGE_FANOUT_STORE", "s3://caseforge-shards/prod")
    template = base_job_template(path)
    assert template["variables"]["properties"]["store"]["default"] == "s3://caseforge-shards/prod"
    assert template["job_configuration"] == yaml.safe_load(open(path))["job_configuration"]
    setup = (DEPLOYMENTS / "setup.sh").read_text()
    assert 'gpu_template="$HERE/gpu/k8s-job-template.yaml"' in setup and "caseforge.runtime.server_setup" in setup


def test_the_workers_extra_is_pinned_on_top_of_the_lock():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["workers"]
    workers, base = pins(ROOT / "requirements-workers.lock"), pins(ROOT / "requirements.lock")
    for requirement in extra:
        name, _, version = requirement.partition("==")
        assert workers.get(name) == version, f"{requirement} is not what requirements-workers.lock pins"
    assert base["prefect"] == "3.8.8"
    assert not set(workers) & set(base), "a package pinned in both lock files"
    assert "requirements-workers.lock" in (ROOT / "Makefile").read_text()


def test_setup_sh_creates_a_concurrency_limit_for_every_upstream_host_the_sources_fetch_from():
    from urllib.parse import urlsplit

    from caseforge.flows.wiring import host_limit_name

    from caseforge.tasks.cn.api import DEFAULT_DOC_URL

    urls = [*load_settings().file.upstream.base_urls().values(), DEFAULT_DOC_URL]
    hosts = {urlsplit(url).hostname for url in urls}
    created = set(re.findall(r"^limit (\S+) \d+", (DEPLOYMENTS / "setup.sh").read_text(), re.M))
    assert created == {host_limit_name(host) for host in hosts}


def test_the_scheduled_nightly_is_tagged_for_the_failure_notification_setup_sh_makes():
    from caseforge.runtime import notifications

    config = yaml.safe_load((DEPLOYMENTS / "prefect.yaml").read_text())
    tagged = {d["name"] for d in config["deployments"] if notifications.NOTIFY_TAG in d.get("tags", [])}
    assert tagged == {"nightly", "oyez-nightly"}
    assert "\n\"$PYTHON\" -m caseforge.runtime.server_setup " in (DEPLOYMENTS / "setup.sh").read_text()


def test_setup_sh_makes_the_zombie_automation_and_then_the_notifications(monkeypatch):
    from caseforge.runtime import notifications, server_setup, zombie_runs

    made = []
    monkeypatch.setattr(zombie_runs, "main", lambda argv: made.append("zombie") or 0)
    monkeypatch.setattr(notifications, "main", lambda argv: made.append("notifications") or 0)
    assert server_setup.main([]) == 0 and made == ["zombie", "notifications"]
    made.clear()
    monkeypatch.setattr(zombie_runs, "main", lambda argv: made.append("zombie") or 2)
    assert server_setup.main([]) == 2 and made == ["zombie"]         # set -e: a failure stops there, as before


def test_the_notification_url_chooses_the_block():
    from prefect.blocks.notifications import (CustomWebhookNotificationBlock, MicrosoftTeamsWebhook, SendgridEmail,
                                              SlackWebhook)

    from caseforge.runtime.notifications import notification_block

    slack, said = notification_block("https://hooks.slack.com/services/T000/B000/XXXX")
    assert isinstance(slack, SlackWebhook) and slack.notify_type == "failure" and "XXXX" not in said
    teams, _ = notification_block("https://prod-01.westeurope.logic.azure.com:443/workflows/abc/triggers/manual/"
                                  "paths/invoke?api-version=2016-06-01&sig=s")
    assert isinstance(teams, MicrosoftTeamsWebhook)
    mail, said = notification_block("sendgrid://SG.key:alerts@example.org/ops@example.org/oncall@example.org")
    assert isinstance(mail, SendgridEmail) and mail.sender_email == "alerts@example.org"
    assert mail.to_emails == ["ops@example.org", "oncall@example.org"] and "SG.key" not in said
    hook, said = notification_block("https://user:secret@alerts.example.org/hooks/caseforge")
    assert isinstance(hook, CustomWebhookNotificationBlock) and hook.json_data["body"] == "{{body}}"
    assert said == "webhook at https://alerts.example.org" and "secret" not in said
    for wrong in ("ftp://example.org/x", "hooks.slack.com/services/T/B/X", "sendgrid://key@example.org/"):
        with pytest.raises(ValueError):
            notification_block(wrong)


def test_without_a_notification_url_none_is_made_and_it_says_so(monkeypatch, capsys):
    from caseforge.runtime import notifications

    monkeypatch.delenv(notifications.NOTIFY_URL_ENV, raising=False)
    monkeypatch.delenv(notifications.NOTIFY_BLOCK_ENV, raising=False)
    assert notifications.main([]) == 0
    assert capsys.readouterr().out.startswith("failure notifications: none (CASEFORGE_NOTIFY_URL and ")
