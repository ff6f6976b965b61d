"""deploy/: the compose file and the Kubernetes manifests parse, carry the required fields, and
every command they run is accepted by the real `auditor` CLI parser (so a renamed option breaks
this test, not a production rollout)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from auditor.surfaces.cli.main import app

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def _parse_cli(args: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """Resolve `auditor [group] <cmd> …` through the real parser: unknown options and bad values raise."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    command: Any = typer.main.get_command(app)  # typer's own click: groups answer get_command
    with command.make_context("auditor", [], resilient_parsing=True) as ctx:
        words = list(args)
        while hasattr(command, "get_command"):  # down through the groups to the command
            name = words.pop(0)
            command = command.get_command(ctx, name)
            assert command is not None, f"no command {name!r} in {args}"
        return command.make_context(name, words, parent=ctx)


def _option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


# -- compose -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_compose_runs_kraft_kafka_postgres_consumer_and_workers(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"kafka", "kafka-topics", "postgres", "consumer", "workers"} <= set(services)
    kafka = services["kafka"]["environment"]
    assert set(kafka["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}  # KRaft, no ZooKeeper
    assert kafka["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{kafka['KAFKA_NODE_ID']}@kafka:")
    assert not any("ZOOKEEPER" in k for k in kafka)
    assert "kafka:9092" in kafka["KAFKA_ADVERTISED_LISTENERS"]
    for name in ("kafka", "postgres", "consumer", "workers"):
        assert services[name]["healthcheck"]["test"], f"{name} has no healthcheck"
    for name in ("consumer", "workers"):
        deps = services[name]["depends_on"]
        assert deps["postgres"]["condition"] == "service_healthy"
        assert deps["kafka-topics"]["condition"] == "service_completed_successfully"
        assert services[name]["environment"]["AUDITOR_STORE"].startswith("postgresql://")
    assert services["workers"]["deploy"]["replicas"] >= 2
    topics = services["kafka-topics"]["command"][0]
    for topic in (
        "agent-steps",
        "agent-traces-closed",
        "agent-audit-reports",
        "agent-audit-alerts",
        "agent-steps-dlq",
    ):
        assert f"{topic}:" in topics


@pytest.mark.parametrize("service", ["consumer", "workers"])
def test_compose_commands_are_valid_cli_calls(
    compose: dict[str, Any], service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = compose["services"][service]
    args = spec["command"]
    ctx = _parse_cli(args, spec["environment"], monkeypatch)
    assert ctx.params["bootstrap"] == "kafka:9092"
    port = ctx.params["metrics_port"]
    assert ctx.params["metrics_host"] == "0.0.0.0"
    assert f"127.0.0.1:{port}/healthz" in " ".join(spec["healthcheck"]["test"])


def test_compose_console_serves_the_store_on_all_interfaces(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = compose["services"]["console"]
    ctx = _parse_cli(spec["command"], spec["environment"], monkeypatch)
    assert ctx.params["host"] == "0.0.0.0" and ctx.params["workers"] >= 2
    port = ctx.params["port"]
    assert f"127.0.0.1:{port}/health" in " ".join(spec["healthcheck"]["test"])
    assert f"{port}:{port}" in spec["ports"]
    assert spec["environment"]["AUDITOR_STORE"].startswith("postgresql://")
    assert spec["depends_on"]["postgres"]["condition"] == "service_healthy"


# -- Kubernetes --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def manifests() -> list[dict[str, Any]]:
    docs = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in manifests if d["kind"] == kind}


def test_every_manifest_has_the_required_fields(manifests: list[dict[str, Any]]) -> None:
    for doc in manifests:
        assert doc.get("apiVersion") and doc.get("kind"), doc
        if doc["kind"] != "Kustomization":
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])
    kustomize = next(d for d in manifests if d["kind"] == "Kustomization")
    on_disk = {p.name for p in (DEPLOY / "k8s").glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomize["resources"]) == on_disk
    assert set(_by_kind(manifests, "Deployment")) == {"auditor-consumer", "auditor-workers"}


@pytest.mark.parametrize("name", ["auditor-consumer", "auditor-workers"])
def test_deployments_are_probed_configured_and_call_the_real_cli(
    manifests: list[dict[str, Any]], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = _by_kind(manifests, "Deployment")[name]
    config = _by_kind(manifests, "ConfigMap")["auditor-config"]["data"]
    spec = deployment["spec"]
    template = spec["template"]
    assert spec["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    (container,) = template["spec"]["containers"]
    assert container["image"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] in ports, f"{name} {probe} names no declared port"
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    refs = container["envFrom"]
    assert {"name": "auditor-config"} in [r.get("configMapRef") for r in refs]
    env = {e["name"]: e for e in container["env"]}
    assert env["AUDITOR_STORE"]["valueFrom"]["secretKeyRef"]["name"] == "auditor-store"
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"

    # Kubernetes expands $(VAR) in args from the container's environment before the CLI sees them.
    values = {**config, "POD_NAME": f"{name}-0"}
    args = [re.sub(r"\$\((\w+)\)", lambda m: values[m.group(1)], a) for a in container["args"]]
    ctx = _parse_cli(args, {"AUDITOR_KAFKA": config["AUDITOR_KAFKA"]}, monkeypatch)
    assert ctx.params["instance_id"] == f"{name}-0"  # static membership: restarts do not rebalance
    assert ctx.params["metrics_host"] == "0.0.0.0"
    assert ctx.params["metrics_port"] == ports["metrics"]
    assert int(template["metadata"]["annotations"]["prometheus.io/port"]) == ports["metrics"]


def test_workers_reference_the_model_keys_secret_without_holding_keys(
    manifests: list[dict[str, Any]],
) -> None:
    workers = _by_kind(manifests, "Deployment")["auditor-workers"]
    (container,) = workers["spec"]["template"]["spec"]["containers"]
    secret = next(r["secretRef"] for r in container["envFrom"] if "secretRef" in r)
    assert secret == {"name": "auditor-model-keys", "optional": True}
    assert not _by_kind(manifests, "Secret"), "secrets are created by the operator, never committed"


# -- monitoring --------------------------------------------------------------------------------


def _mounts(spec: dict[str, Any]) -> dict[str, Path]:
    """A compose service's bind mounts: container path -> path on the host (relative to deploy/)."""
    return {
        target: (DEPLOY / source).resolve()
        for source, target, *_ in (v.split(":") for v in spec["volumes"])
        if source.startswith(".")
    }


def test_prometheus_scrapes_every_port_compose_serves_metrics_on(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    services = compose["services"]
    for name in ("prometheus", "grafana"):
        assert services[name]["profiles"] == ["monitoring"], "monitoring is opt-in: `up` alone is unchanged"
    mounts = _mounts(services["prometheus"])
    config_dir = mounts["/etc/prometheus"]
    config = yaml.safe_load((config_dir / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"auditor-consumer", "auditor-workers", "auditor-api"}
    for service, job in (("consumer", "auditor-consumer"), ("workers", "auditor-workers")):
        spec = services[service]
        port = _parse_cli(spec["command"], spec["environment"], monkeypatch).params["metrics_port"]
        (sd,) = jobs[job]["dns_sd_configs"]  # every replica, as Docker's DNS lists them
        assert (sd["names"], sd["type"], sd["port"]) == ([service], "A", port)
    console = services["console"]
    port = _parse_cli(console["command"], console["environment"], monkeypatch).params["port"]
    api = jobs["auditor-api"]
    assert api["static_configs"] == [{"targets": [f"console:{port}"]}] and api["metrics_path"] == "/metrics"
    token = Path(api["authorization"]["credentials_file"])  # the API's /metrics wants a metrics-scope token
    assert api["authorization"]["type"] == "Bearer" and token.parent == Path("/etc/prometheus")
    assert token.name in (config_dir / ".gitignore").read_text().split(), "the token is never committed"


def test_grafana_provisions_prometheus_and_the_dashboard(compose: dict[str, Any]) -> None:
    services = compose["services"]
    mounts = _mounts(services["grafana"])
    provisioning = mounts["/etc/grafana/provisioning"]
    (source,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yaml").read_text())["datasources"]
    prometheus_port = services["prometheus"]["ports"][0].split(":")[-1]
    assert source["type"] == "prometheus" and source["url"] == f"http://prometheus:{prometheus_port}"
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "auditor.yaml").read_text())["providers"]
    folder = provider["options"]["path"]
    dashboards = {target: host for target, host in mounts.items() if target.startswith(f"{folder}/")}
    assert dashboards == {f"{folder}/auditor-dashboard.json": DEPLOY / "grafana" / "auditor-dashboard.json"}
    assert (DEPLOY / "grafana" / "auditor-dashboard.json").is_file()
