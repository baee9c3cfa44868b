"""The deployment files: docker-compose.yml and its `cluster` profile (deploy/cluster/), the
Kubernetes manifests (deploy/k8s/) and the Grafana dashboard (deploy/grafana/).

Offline: Kubernetes manifests are checked against the API schemas that `kubernetes-validate`
ships, docker-compose.yml against the Compose Specification schema that `check-jsonschema`
ships; the rest is read and cross-checked here (names, ports, labels, metric names)."""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from app.config import load_config, parse_config
from app.main import build_state

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
CLUSTER = ROOT / "deploy" / "cluster"
DASHBOARD = ROOT / "deploy" / "grafana" / "toolrelay-dashboard.json"

# The oldest Kubernetes still commonly run, and the newest the validator knows.
K8S_VERSIONS = ["1.30.0", kubernetes_validate.latest_version()]


# Metric families on GET /metrics, with their labels (counters are exposed with `_total`,
# histograms with `_bucket/_sum/_count`). To be read from a live /metrics later.
def live_families() -> dict[str, set[str]]:
    """Every metric family the app registers, as exposed (counters with `_total`), with its
    label names: read from a real app's registry, so the dashboard cannot drift from it."""
    raw = {"providers": {"demo": {"kind": "demo"}}, "models": []}
    registry = build_state(parse_config(raw, "families", {})).registry
    families = {}
    for collector in registry._collector_to_names:
        suffix = "_total" if collector._type == "counter" else ""
        families[collector._name + suffix] = set(collector._labelnames)
    return families


FAMILIES = live_families()
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
TARGET_LABELS = {"instance", "job"}  # added by Prometheus to every scraped series


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def dockerfile_env(name: str) -> str:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    match = re.search(rf"\b{name}=(\S+)", text)
    assert match, f"Dockerfile sets no {name}"
    return match.group(1)


DOCKER_CONFIG_PATH = dockerfile_env("TOOLRELAY_CONFIG")


# --- Kubernetes --------------------------------------------------------------------------


def k8s_documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc is not None:
                docs.append((path.name, doc))
    return docs


def k8s_object(kind: str, name: str) -> dict[str, Any]:
    found = [
        doc for _, doc in k8s_documents() if (doc["kind"], doc["metadata"]["name"]) == (kind, name)
    ]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def named_port(container: dict[str, Any], port: int | str) -> int:
    """A probe's or Service's port as a number: numbers stay, names resolve in the container."""
    if isinstance(port, int):
        return port
    numbers = [p["containerPort"] for p in container["ports"] if p.get("name") == port]
    assert numbers, f"container {container['name']} has no port named {port!r}"
    return int(numbers[0])


def only_container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize(
    ("filename", "doc"),
    k8s_documents(),
    ids=[f"{name}:{doc['kind']}/{doc['metadata']['name']}" for name, doc in k8s_documents()],
)
def test_k8s_manifest_matches_the_api_schema(
    filename: str, doc: dict[str, Any], version: str
) -> None:
    try:
        kubernetes_validate.validate(doc, version, strict=True)  # strict: unknown fields fail
    except kubernetes_validate.ValidationError as exc:
        where = "/".join(str(part) for part in exc.path)
        pytest.fail(f"{filename}: {doc['kind']} at {where or '<root>'}: {exc.message}")


def test_k8s_validator_is_offline_and_strict() -> None:
    service = json.loads(json.dumps(k8s_object("Service", "toolrelay")))
    service["spec"]["portz"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, K8S_VERSIONS[-1], strict=True)


def test_kustomization_lists_every_manifest() -> None:
    kustomization = load_yaml(K8S / "kustomization.yaml")
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kustomization["kind"] == "Kustomization"
    resources = kustomization["resources"]
    assert len(resources) == len(set(resources))
    expected = {path.name for path in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(resources) == expected
    assert expected >= {
        "configmap.yaml",
        "secret.yaml",
        "deployment.yaml",
        "service.yaml",
        "hpa.yaml",
        "redis.yaml",
    }


def test_k8s_deployment_probes_health_on_the_container_port() -> None:
    deployment = k8s_object("Deployment", "toolrelay")
    assert deployment["spec"]["replicas"] == 2
    container = only_container(deployment)
    assert container["image"] == "toolrelay:latest"
    assert [p["containerPort"] for p in container["ports"]] == [8080]
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/health", probe
        assert named_port(container, get["port"]) == 8080, probe
    requests, limits = container["resources"]["requests"], container["resources"]["limits"]
    assert {"cpu", "memory"} <= set(requests)
    assert {"cpu", "memory"} <= set(limits)


def test_k8s_deployment_runs_like_the_image() -> None:
    deployment = k8s_object("Deployment", "toolrelay")
    pod = deployment["spec"]["template"]
    container = only_container(deployment)
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == "8080"
    assert annotations["prometheus.io/path"] == "/metrics"
    # SIGTERM lets requests in flight finish for shutdown_grace: the pod must outlive that.
    configured = yaml.safe_load(k8s_object("ConfigMap", "toolrelay-config")["data"]["config.yaml"])
    grace = configured["server"].get("shutdown_grace", parse_config({}, "-").server.shutdown_grace)
    assert grace >= 30
    assert pod["spec"]["terminationGracePeriodSeconds"] > grace
    # The config lands where the image looks for it.
    env = {item["name"]: item for item in container["env"]}
    assert env["TOOLRELAY_CONFIG"]["value"] == DOCKER_CONFIG_PATH
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "config")
    assert volume["configMap"]["name"] == "toolrelay-config"
    mounted = {
        f"{mount['mountPath']}/{item['path']}": item["key"] for item in volume["configMap"]["items"]
    }
    assert mounted == {DOCKER_CONFIG_PATH: "config.yaml"}
    # Non-root, as the image's user (the Dockerfile names it, so the uid is given here).
    uid = re.search(r"useradd [^&]*--uid (\d+)", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    assert uid
    security = pod["spec"]["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == int(uid.group(1))


def test_k8s_service_selects_the_deployment_pods_only() -> None:
    service = k8s_object("Service", "toolrelay")
    deployment = k8s_object("Deployment", "toolrelay")
    assert service["spec"]["type"] == "ClusterIP"
    selector = service["spec"]["selector"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= pod_labels.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    redis_labels = k8s_object("Deployment", "toolrelay-redis")["spec"]["template"]["metadata"][
        "labels"
    ]
    assert not selector.items() <= redis_labels.items()
    [port] = service["spec"]["ports"]
    assert port["port"] == 8080
    assert named_port(only_container(deployment), port["targetPort"]) == 8080


def test_k8s_hpa_scales_the_deployment_on_cpu() -> None:
    hpa = k8s_object("HorizontalPodAutoscaler", "toolrelay")
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        "apps/v1",
        "Deployment",
        "toolrelay",
    )
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 10)
    [metric] = hpa["spec"]["metrics"]
    assert metric["type"] == "Resource"
    assert metric["resource"]["name"] == "cpu"
    # Utilization is a share of the request: without a cpu request the HPA cannot act.
    assert "cpu" in only_container(k8s_object("Deployment", "toolrelay"))["resources"]["requests"]


def test_k8s_redis_is_where_the_config_points() -> None:
    service = k8s_object("Service", "toolrelay-redis")
    redis = k8s_object("Deployment", "toolrelay-redis")
    assert only_container(redis)["image"] == "redis:7-alpine"
    assert (
        service["spec"]["selector"].items()
        <= redis["spec"]["template"]["metadata"]["labels"].items()
    )
    [port] = service["spec"]["ports"]
    assert port["port"] == 6379
    store = yaml.safe_load(k8s_object("ConfigMap", "toolrelay-config")["data"]["config.yaml"])[
        "server"
    ]["store"]
    assert store["kind"] == "redis"
    assert store["url"] == "redis://toolrelay-redis:6379/0"


def k8s_config_environ() -> dict[str, str]:
    """The env the pods get from the Secret, with its placeholder values."""
    secret = k8s_object("Secret", "toolrelay-keys")
    container = only_container(k8s_object("Deployment", "toolrelay"))
    environ = {}
    for item in container["env"]:
        ref = item.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            assert ref["name"] == "toolrelay-keys"
            assert ref["key"] in secret["stringData"], ref
            environ[item["name"]] = secret["stringData"][ref["key"]]
    return environ


def test_k8s_config_vars_all_come_from_the_secret() -> None:
    text = k8s_object("ConfigMap", "toolrelay-config")["data"]["config.yaml"]
    used = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", text))
    assert used
    assert used == set(k8s_config_environ())


def test_k8s_config_loads_with_the_app_loader() -> None:
    # Needs server.keys/limits/store/log in app.config.
    text = k8s_object("ConfigMap", "toolrelay-config")["data"]["config.yaml"]
    config = parse_config(yaml.safe_load(text), "deploy/k8s/configmap.yaml", k8s_config_environ())
    assert {model.name for model in config.models} >= {"demo", "demo-text"}


# --- docker-compose.yml and deploy/cluster/ ----------------------------------------------

# The default service, as it was before the cluster profile: `docker compose up` must not change.
DEFAULT_TOOLRELAY_SERVICE = {
    "build": ".",
    "image": "toolrelay:latest",
    "ports": ["8080:8080"],
    "volumes": ["./config.yaml:/etc/toolrelay/config.yaml:ro"],
    "environment": {
        "TOOLRELAY_API_KEY": "${TOOLRELAY_API_KEY:-}",
        "OPENAI_API_KEY": "${OPENAI_API_KEY:-}",
        "ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY:-}",
        "GEMINI_API_KEY": "${GEMINI_API_KEY:-}",
    },
    "restart": "unless-stopped",
}
CLUSTER_SERVICES = {"toolrelay-1", "toolrelay-2", "nginx", "redis", "prometheus"}
REPLICAS = ["toolrelay-1", "toolrelay-2"]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return dict(load_yaml(ROOT / "docker-compose.yml"))


def test_compose_matches_the_compose_spec_schema(compose: dict[str, Any]) -> None:
    vendored = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    schema = json.loads((vendored / "compose-spec.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(compose)]
    assert errors == []
    broken = json.loads(json.dumps(compose))
    broken["services"]["nginx"]["portz"] = ["8080"]
    assert not validator.is_valid(broken)


def test_compose_default_services_are_unchanged(compose: dict[str, Any]) -> None:
    default = {name: svc for name, svc in compose["services"].items() if not svc.get("profiles")}
    assert default == {"toolrelay": DEFAULT_TOOLRELAY_SERVICE}


def test_compose_cluster_profile(compose: dict[str, Any]) -> None:
    services = compose["services"]
    cluster = {name for name, svc in services.items() if "cluster" in svc.get("profiles", [])}
    assert cluster == CLUSTER_SERVICES
    for name in REPLICAS:
        replica = services[name]
        assert replica["build"] == DEFAULT_TOOLRELAY_SERVICE["build"], name
        assert replica["image"] == DEFAULT_TOOLRELAY_SERVICE["image"], name
        assert replica["volumes"] == [f"./deploy/cluster/config.yaml:{DOCKER_CONFIG_PATH}:ro"], name
        assert "ports" not in replica, f"{name}: reached through nginx only"
        assert "redis" in replica["depends_on"], name
    nginx = services["nginx"]
    assert nginx["ports"] == ["8090:8080"], "8080 is the single toolrelay service's"
    assert "./deploy/cluster/nginx.conf:/etc/nginx/nginx.conf:ro" in nginx["volumes"]
    assert set(nginx["depends_on"]) == set(REPLICAS)
    assert services["redis"]["image"] == "redis:7-alpine"
    prometheus = services["prometheus"]
    assert prometheus["image"].startswith("prom/prometheus")
    assert prometheus["ports"] == ["9090:9090"]
    assert (
        "./deploy/cluster/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in prometheus["volumes"]
    )
    for path in ("config.yaml", "nginx.conf", "prometheus.yml", "README.md"):
        assert (CLUSTER / path).is_file(), path


def nginx_conf() -> str:
    text = (CLUSTER / "nginx.conf").read_text(encoding="utf-8")
    return re.sub(r"#[^\n]*", "", text)


def test_nginx_balances_over_exactly_the_two_replicas() -> None:
    text = nginx_conf()
    upstreams = re.findall(r"\bupstream\s+(\S+)\s*\{([^}]*)\}", text)
    assert len(upstreams) == 1
    name, body = upstreams[0]
    servers = re.findall(r"^\s*server\s+([^\s;]+)", body, re.MULTILINE)
    assert servers == [f"{replica}:8080" for replica in REPLICAS]
    assert re.search(r"^\s*listen\s+8080\s*;", text, re.MULTILINE)
    assert re.findall(r"proxy_pass\s+([^;]+);", text) == [f"http://{name}"]


def test_nginx_does_not_hold_back_streams() -> None:
    directives = dict(re.findall(r"^\s*(proxy_\w+)\s+([^;]+);", nginx_conf(), re.MULTILINE))
    assert directives["proxy_buffering"] == "off"
    assert directives["proxy_http_version"] == "1.1"
    assert directives["proxy_set_header"]  # (Connection "" for upstream keep-alive, among others)
    assert 'proxy_set_header Connection ""' in nginx_conf()
    timeout = re.fullmatch(r"(\d+)s", directives["proxy_read_timeout"])
    assert timeout
    assert int(timeout.group(1)) >= 600  # the server's own total limit for a stream


def test_prometheus_scrapes_each_replica() -> None:
    config = load_yaml(CLUSTER / "prometheus.yml")
    targets = [
        target
        for job in config["scrape_configs"]
        if job.get("metrics_path", "/metrics") == "/metrics"
        for static in job["static_configs"]
        for target in static["targets"]
    ]
    assert sorted(targets) == [f"{replica}:8080" for replica in REPLICAS]


def test_cluster_config_shares_limits_through_redis() -> None:
    raw = load_yaml(CLUSTER / "config.yaml")
    server = raw["server"]
    assert server["store"] == {"kind": "redis", "url": "redis://redis:6379/0", "on_error": "open"}
    keys = {key["name"]: key for key in server["keys"]}
    assert keys["alice"]["limits"]["rpm"] == 20
    assert keys["bob"]["key_sha256"] == hashlib.sha256(b"bob-demo-key").hexdigest()
    assert {provider["kind"] for provider in raw["providers"].values()} == {"demo"}


def test_cluster_config_loads_with_the_app_loader() -> None:
    # Needs server.keys/limits/store/log in app.config.
    config = load_config(CLUSTER / "config.yaml", environ={})
    assert {model.name for model in config.models} >= {"demo", "demo-text"}


# --- Grafana dashboard -------------------------------------------------------------------

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [panel for panel in dashboard["panels"] if panel["type"] != "row"]


def exprs(dashboard: dict[str, Any]) -> list[str]:
    found = [target["expr"] for panel in panels(dashboard) for target in panel["targets"]]
    found += [
        var["definition"] for var in dashboard["templating"]["list"] if var["type"] == "query"
    ]
    return found


def family(name: str) -> str:
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name.removesuffix(suffix) in FAMILIES:
            return name.removesuffix(suffix)
    return name


def test_dashboard_asks_for_a_prometheus_and_filters_by_model_and_key(
    dashboard: dict[str, Any],
) -> None:
    assert 36 <= dashboard["schemaVersion"] <= 41
    assert dashboard["uid"]
    assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    variables = {var["name"]: var for var in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["datasource"]["current"]["value"] == "${DS_PROMETHEUS}"
    for name in ("model", "key"):
        var = variables[name]
        assert var["type"] == "query"
        assert var["datasource"] == DATASOURCE
        assert re.fullmatch(
            rf"label_values\(toolrelay_\w+(\{{[^}}]*\}})?, {name}\)", var["definition"]
        )
        assert var["query"]["query"] == var["definition"]


def test_dashboard_panels_use_the_datasource_variable(dashboard: dict[str, Any]) -> None:
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert len(panels(dashboard)) >= 12
    for panel in panels(dashboard):
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]
            assert target["expr"].strip(), panel["title"]
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]


def test_dashboard_queries_only_known_metrics_and_labels(dashboard: dict[str, Any]) -> None:
    used = set()
    for expr in exprs(dashboard):
        assert expr.count("(") == expr.count(")"), expr
        assert expr.count("{") == expr.count("}"), expr
        names = re.findall(r"\btoolrelay_\w+", expr)
        assert names, expr
        for name in names:
            assert family(name) in FAMILIES, f"{name} in {expr}"
            used.add(family(name))
        # Label matchers: metric{label=~"..."} name the metric's own labels.
        for name, matchers in re.findall(r"\b(toolrelay_\w+)\{([^}]*)\}", expr):
            labels = set(re.findall(r"(\w+)\s*[=!]~?", matchers))
            allowed = (
                FAMILIES[family(name)]
                | TARGET_LABELS
                | ({"le"} if name.endswith("_bucket") else set())
            )
            assert labels <= allowed, f"{labels - allowed} not labels of {name}: {expr}"
        # Grouping: `by (...)` right over a metric (or its rate) keeps labels it has.
        for by, name in re.findall(r"\bby \(([^)]*)\)\s*\(\s*(?:rate\(\s*)?(toolrelay_\w+)", expr):
            labels = {label.strip() for label in by.split(",")}
            allowed = (
                FAMILIES[family(name)]
                | TARGET_LABELS
                | ({"le"} if name.endswith("_bucket") else set())
            )
            assert labels <= allowed, f"{labels - allowed} not labels of {name}: {expr}"
    assert used == set(FAMILIES), f"not on the dashboard: {set(FAMILIES) - used}"
