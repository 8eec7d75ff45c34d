"""deploy/: the Dockerfile, the compose file and the Kubernetes manifests hold together.

Built-in Kubernetes kinds are validated against the API schemas shipped by
``kubernetes-validate`` (offline); KEDA's ScaledObject and the compose file get structural
checks here; ``docker compose config`` / ``docker-compose config`` and ``kubectl kustomize``
run too when this machine has them (they need no engine or cluster for that).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from worker import keys
from worker.ladders import load_config, parse_config
from worker.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
KUBERNETES_VERSION = "1.30"
BUILT_IN = {"Namespace", "ConfigMap", "Secret", "Deployment", "Job", "CronJob", "Service"}
BUILT_IN |= {"PodDisruptionBudget", "NetworkPolicy"}
COMPOSE_ENV = {
    "LADDER_NETWORK_KEY": "compose-config-test-key",
    "LADDER_API_TOKENS": "site:compose-config-test-token:boards",
}


def _manifests() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                found.append((path.name, doc))
    return found


MANIFESTS = _manifests()


def _one(kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for _, d in MANIFESTS if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def _pods() -> list[tuple[str, dict[str, Any]]]:
    """Each Deployment's, Job's and CronJob's pod template: (the manifest's name, template)."""
    found = []
    for _, doc in MANIFESTS:
        if doc["kind"] in {"Deployment", "Job"}:
            found.append((doc["metadata"]["name"], doc["spec"]["template"]))
        elif doc["kind"] == "CronJob":
            found.append((doc["metadata"]["name"], doc["spec"]["jobTemplate"]["spec"]["template"]))
    return found


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    return data


def _job_grace_needed(job_timeout: str | None) -> int:
    """A warm shutdown lets the batch in hand finish: that takes at most the job timeout."""
    return int(job_timeout or Settings().job_timeout) + 10


def _seconds(value: str) -> int:
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", value)
    assert match and value, f"not a duration: {value!r}"
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


# -- Kubernetes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "doc"),
    [m for m in MANIFESTS if m[1]["kind"] in BUILT_IN],
    ids=[f"{s}:{d['kind']}/{d['metadata']['name']}" for s, d in MANIFESTS if d["kind"] in BUILT_IN],
)
def test_every_built_in_manifest_validates_against_the_kubernetes_schema(source, doc):
    """Strict validation: unknown or misplaced fields fail, not only missing ones."""
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_every_manifest_has_a_known_kind_a_name_and_the_ladder_namespace():
    """Nothing in deploy/k8s goes unchecked or lands in the default namespace."""
    kinds = {doc["kind"] for _, doc in MANIFESTS}
    assert kinds <= BUILT_IN | {"ScaledObject"}
    for source, doc in MANIFESTS:
        assert doc["metadata"]["name"], source
        if doc["kind"] != "Namespace":
            assert "ladder" == doc["metadata"]["namespace"], source


def test_the_kustomization_lists_every_manifest_file():
    """``kubectl apply -k deploy/k8s`` applies every file in the folder."""
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert files == set(kustomization["resources"])


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubectl_kustomize_builds_the_folder():
    """The kustomization renders offline (no cluster needed)."""
    result = subprocess.run(
        ["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=60
    )
    assert 0 == result.returncode, result.stderr
    rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert len(MANIFESTS) == len(rendered)


def _worker_pod() -> dict[str, Any]:
    spec: dict[str, Any] = _one("Deployment", "ladder-worker")["spec"]["template"]["spec"]
    return spec


def test_the_worker_grace_period_outlasts_one_batch():
    """SIGTERM finishes the batch in hand, so the grace period must cover a job's timeout."""
    job_timeout = _one("ConfigMap", "ladder-env")["data"].get("LADDER_JOB_TIMEOUT")
    assert _worker_pod()["terminationGracePeriodSeconds"] >= _job_grace_needed(job_timeout)
    (container,) = _worker_pod()["containers"]
    assert "lifecycle" not in container  # RQ's warm shutdown needs no preStop hook


def test_the_worker_probes_are_ladder_health_commands():
    """Liveness runs ``ladder health``; readiness ``ladder health --ready``."""
    (container,) = _worker_pod()["containers"]
    assert ["worker"] == container["args"]
    live = container["livenessProbe"]["exec"]["command"]
    ready = container["readinessProbe"]["exec"]["command"]
    assert ["ladder", "health"] == live[:2] and "--ready" not in live
    assert ["ladder", "health", "--ready"] == ready[:3]
    for probe in (container["livenessProbe"], container["readinessProbe"]):
        timeout = float(probe["exec"]["command"][probe["exec"]["command"].index("--timeout") + 1])
        assert timeout < probe["timeoutSeconds"]


def test_the_pods_run_as_a_non_root_user_with_a_read_only_root():
    """Every pod runs as the image's unprivileged user and cannot escalate."""
    for _, template in _pods():
        pod = template["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        for container in pod.get("initContainers", []) + pod["containers"]:
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert container["image"].startswith("ladder")


def test_every_referenced_config_map_and_secret_exists():
    """envFrom and volumes name only ConfigMaps and Secrets that the folder defines."""
    defined = {(doc["kind"], doc["metadata"]["name"]) for _, doc in MANIFESTS}
    for _, template in _pods():
        pod = template["spec"]
        for container in pod.get("initContainers", []) + pod["containers"]:
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert ("ConfigMap", source["configMapRef"]["name"]) in defined
                if "secretRef" in source:
                    assert ("Secret", source["secretRef"]["name"]) in defined
            for variable in container.get("env", []):
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    secret = _one("Secret", ref["name"])
                    assert ref["key"] in secret["stringData"], (ref, variable["name"])
        for volume in pod.get("volumes", []):
            if "configMap" in volume:
                assert ("ConfigMap", volume["configMap"]["name"]) in defined
            if "secret" in volume:
                secret = _one("Secret", volume["secret"]["secretName"])
                for item in volume["secret"].get("items", []):
                    assert item["key"] in secret["stringData"]


def test_selectors_match_their_pod_labels():
    """Deployments, the PDB and the Services select the pods they were written for."""
    pods: dict[str, dict[str, str]] = {}
    for _, doc in MANIFESTS:
        if doc["kind"] == "Deployment":
            labels = doc["spec"]["template"]["metadata"]["labels"]
            assert doc["spec"]["selector"]["matchLabels"].items() <= labels.items()
            pods[doc["metadata"]["name"]] = labels
    for _, doc in MANIFESTS:
        if doc["kind"] == "Service":
            selector = doc["spec"]["selector"]
        elif doc["kind"] == "PodDisruptionBudget":
            selector = doc["spec"]["selector"]["matchLabels"]
        else:
            continue
        assert any(selector.items() <= labels.items() for labels in pods.values())


def test_the_env_config_map_sets_what_the_worker_reads():
    """The queue URL, the config path where the ladders ConfigMap is mounted, the metrics port."""
    env = _one("ConfigMap", "ladder-env")["data"]
    assert all(isinstance(v, str) for v in env.values())
    assert "REDIS_URL" not in env  # it carries the worker's password: in the Secret
    mount = next(
        m for m in _worker_pod()["containers"][0]["volumeMounts"] if m["name"] == "ladders"
    )
    assert env["LADDER_CONFIG"] == f"{mount['mountPath']}/ladders.toml"
    ports = {p["name"]: p["containerPort"] for p in _worker_pod()["containers"][0]["ports"]}
    assert int(env["LADDER_METRICS_PORT"]) == ports["metrics"]
    secret = _one("Secret", "ladder-secrets")["stringData"]
    assert {"DATABASE_URL", "LADDER_NETWORK_KEY", "REDIS_URL"} <= set(secret)


def test_the_ladders_config_map_holds_the_shipped_ladder_configuration():
    """The mounted TOML loads, and defines the same ladders as worker/defaults/ladders.toml."""
    text = _one("ConfigMap", "ladder-ladders")["data"]["ladders.toml"]
    assert load_config().ladders == parse_config(text, "configmap").ladders


def test_the_scaled_object_scales_the_worker_on_the_inbox_alone():
    """KEDA watches one list, ``ladder:inbox`` on the queue Redis: the backlog waits there (a
    worker stages a batch only when free to run it). At least one replica stays, for the
    retries and staged batches that wait for a live worker."""
    scaled = _one("ScaledObject", "ladder-worker")
    assert "keda.sh/v1alpha1" == scaled["apiVersion"]
    target = scaled["spec"]["scaleTargetRef"]
    assert ("Deployment", "ladder-worker") == (target.get("kind", "Deployment"), target["name"])
    assert 1 <= scaled["spec"]["minReplicaCount"] <= scaled["spec"]["maxReplicaCount"]
    env = _one("ConfigMap", "ladder-env")["data"]
    lists = []
    for trigger in scaled["spec"]["triggers"]:
        assert "redis" == trigger["type"]
        meta = trigger["metadata"]
        assert all(isinstance(v, str) for v in meta.values())  # KEDA wants strings
        assert int(meta["listLength"]) > 0
        address = env[meta["addressFromEnv"]]
        assert re.fullmatch(r"[\w.-]+:\d+", address)
        secret = _one("Secret", "ladder-secrets")["stringData"]
        user = env[meta["usernameFromEnv"]]
        assert secret["REDIS_URL"].startswith(f"redis://{user}:")
        assert secret["REDIS_URL"].endswith(f"@{address}/0")
        assert meta["passwordFromEnv"] in secret
        lists.append(meta["listName"])
    assert [keys.INBOX] == lists


def test_the_migration_job_runs_ladder_migrate_once():
    """A Job with a finite back-off that runs ``ladder migrate``."""
    job = _one("Job", "ladder-migrate")["spec"]
    (container,) = job["template"]["spec"]["containers"]
    assert ["migrate"] == container["args"]
    assert job["template"]["spec"]["restartPolicy"] in {"OnFailure", "Never"}
    assert job["backoffLimit"] > 0


def test_each_pod_reaches_postgresql_as_the_role_deploy_security_gives_it():
    """deploy/SECURITY.md's roles: workers as ladder_worker, the API as ladder_reader, the
    migration (once per release, and on the first of each month, which makes the months'
    partitions the workers cannot) as ladder_owner, whose URL no other pod is given."""

    def user(secret: str) -> str:
        url = _one("Secret", secret)["stringData"]["DATABASE_URL"]
        found = re.match(r"postgresql://([^:@]+)", url)
        assert found is not None, url
        return found.group(1)

    roles = {}
    for name, template in _pods():
        (container,) = template["spec"]["containers"]
        secrets = [s["secretRef"]["name"] for s in container["envFrom"] if "secretRef" in s]
        assert "DATABASE_URL" not in {v["name"] for v in container.get("env", [])}, name
        with_url = [s for s in secrets if "DATABASE_URL" in _one("Secret", s)["stringData"]]
        roles[name] = user(with_url[-1])  # envFrom: the last source wins
    assert {
        "ladder-worker": "ladder_worker",
        "ladder-api": "ladder_reader",
        "ladder-migrate": "ladder_owner",
        "ladder-migrate-monthly": "ladder_owner",
    } == roles
    monthly = _one("CronJob", "ladder-migrate-monthly")["spec"]
    (container,) = monthly["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert ["migrate"] == container["args"]
    assert "1" == monthly["schedule"].split()[2] and "Forbid" == monthly["concurrencyPolicy"]


def _pod_names() -> set[str]:
    return {template["metadata"]["labels"]["app.kubernetes.io/name"] for _, template in _pods()}


def test_only_the_workers_the_api_and_the_migration_reach_postgresql():
    """SPEC 6 / issue 33: NetworkPolicies let only workers and serve (and the migrate Job)
    reach PostgreSQL, on its port alone."""
    policy = _one("NetworkPolicy", "ladder-postgres")["spec"]
    assert {"app.kubernetes.io/name": "ladder-postgres"} == policy["podSelector"]["matchLabels"]
    assert ["Ingress"] == policy["policyTypes"]
    (rule,) = policy["ingress"]
    (source,) = rule["from"]
    assert set(source) == {"podSelector"}  # no namespace or address range lets others in
    (match,) = source["podSelector"]["matchExpressions"]
    assert ("app.kubernetes.io/name", "In") == (match["key"], match["operator"])
    assert {"ladder-worker", "ladder-api", "ladder-migrate"} == set(match["values"])
    assert set(match["values"]) == _pod_names()
    assert [{"protocol": "TCP", "port": 5432}] == rule["ports"]


def test_the_api_mounts_its_tokens_from_a_secret_and_reads_redis_as_the_reader():
    """Tokens come from a Secret mounted as LADDER_API_TOKENS_FILE, never a ConfigMap; the
    API's Redis URL names the read-only reader user, the workers' the worker user."""
    deployment = _one("Deployment", "ladder-api")["spec"]["template"]["spec"]
    (container,) = deployment["containers"]
    env = {v["name"]: v for v in container.get("env", [])}
    path = env["LADDER_API_TOKENS_FILE"]["value"]
    volumes = {v["name"]: v for v in deployment["volumes"]}
    (mount,) = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    secret_volume = volumes[mount["name"]]["secret"]
    (item,) = secret_volume["items"]
    assert path == f"{mount['mountPath']}/{item['path']}"
    api_secret = _one("Secret", secret_volume["secretName"])["stringData"]
    assert api_secret["REDIS_URL"].startswith("redis://reader:")
    assert {"secretRef": {"name": secret_volume["secretName"]}} in container["envFrom"]
    assert {"secretRef": {"name": "ladder-secrets"}} not in container["envFrom"]
    assert _one("Secret", "ladder-secrets")["stringData"]["REDIS_URL"].startswith("redis://worker:")
    for _, doc in MANIFESTS:
        if doc["kind"] == "ConfigMap":
            assert not any("TOKEN" in k or "PASSWORD" in k for k in doc["data"])


def test_the_redis_acl_secret_holds_the_shipped_acl_file():
    """The Secret a Redis pod mounts as its --aclfile starts as deploy/redis/users.acl."""
    acl = _one("Secret", "ladder-redis-acl")["stringData"]["users.acl"]
    assert (DEPLOY / "redis" / "users.acl").read_text(encoding="utf-8") == acl


# -- compose -----------------------------------------------------------------------------


def test_compose_publishes_no_store_port_and_runs_redis_with_the_acl_file():
    """Issue 33: no store port on the host; Redis loads the ACL users (default off); every
    Redis URL names its user; the API reads as the reader; rq-dashboard on this host only."""
    services = _compose()["services"]
    assert "ports" not in services["redis"] and "ports" not in services["postgres"]
    redis = services["redis"]
    command = redis["command"]
    acl_path = command[command.index("--aclfile") + 1]
    (mount,) = [v for v in redis["volumes"] if v.endswith(f":{acl_path}:ro")]
    default = re.fullmatch(r"\$\{LADDER_REDIS_ACL_FILE:-(.+)\}", mount.split(":" + acl_path)[0])
    assert default and (DEPLOY / default.group(1)).resolve() == DEPLOY / "redis" / "users.acl"
    assert "--user worker" in " ".join(redis["healthcheck"]["test"])
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            if "REDIS_URL" in key and isinstance(value, str) and value.startswith("redis"):
                user = "reader" if name == "api" else "worker"
                assert value.startswith(f"redis://{user}:"), (name, key)
    assert all(p.startswith("127.0.0.1:") for p in services["rq-dashboard"]["ports"])
    assert services["api"]["environment"]["LADDER_API_TOKENS"].startswith("${LADDER_API_TOKENS:?")


def test_the_queue_redis_keeps_an_append_only_file_synced_every_second():
    """Without AOF a Redis restart loses every event in the inbox and queue."""
    redis = _compose()["services"]["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command and "--appendfsync everysec" in command
    assert any(v.endswith(":/data") for v in redis["volumes"])


def test_compose_runs_migrate_once_then_n_workers_the_api_and_rq_dashboard():
    """Workers wait for the one-shot migration; replicas come from LADDER_WORKERS."""
    services = _compose()["services"]
    assert {"redis", "postgres", "migrate", "worker", "api", "rq-dashboard"} <= set(services)
    assert ["migrate"] == services["migrate"]["command"]
    assert "no" == services["migrate"]["restart"]
    worker = services["worker"]
    assert "service_completed_successfully" == worker["depends_on"]["migrate"]["condition"]
    assert re.fullmatch(r"\$\{LADDER_WORKERS:-\d+\}", str(worker["deploy"]["replicas"]))
    job_timeout = worker["environment"].get("LADDER_JOB_TIMEOUT")
    assert _seconds(worker["stop_grace_period"]) >= _job_grace_needed(job_timeout)
    assert ["ladder", "health", "--ready"] == worker["healthcheck"]["test"][1:4]
    assert ["serve", "--host", "0.0.0.0"] == services["api"]["command"][:3]
    assert "--port" in services["api"]["command"]


def test_compose_builds_from_the_dockerfile_and_mounts_files_that_exist():
    """Every ladder service builds deploy/Dockerfile; every bind-mounted file is in the tree."""
    for name, service in _compose()["services"].items():
        if "build" in service:
            assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name}: {source}"


def _compose_command() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


COMPOSE = _compose_command()


@pytest.mark.skipif(COMPOSE is None, reason="neither docker compose nor docker-compose installed")
def test_docker_compose_config_accepts_the_file():
    """The compose tool itself parses, interpolates and validates the file (no engine needed)."""
    assert COMPOSE is not None
    result = subprocess.run(
        [*COMPOSE, "-f", str(DEPLOY / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **COMPOSE_ENV},
    )
    assert 0 == result.returncode, result.stderr
    rendered = yaml.safe_load(result.stdout)
    assert 2 == rendered["services"]["worker"]["deploy"]["replicas"]
    assert "" == result.stderr.strip(), result.stderr


@pytest.mark.skipif(COMPOSE is None, reason="neither docker compose nor docker-compose installed")
def test_docker_compose_refuses_to_start_without_a_network_key():
    """A production deployment never runs with the development network key."""
    assert COMPOSE is not None
    env = {k: v for k, v in os.environ.items() if k != "LADDER_NETWORK_KEY"}
    env["LADDER_API_TOKENS"] = COMPOSE_ENV["LADDER_API_TOKENS"]
    result = subprocess.run(
        [*COMPOSE, "-f", str(DEPLOY / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert 0 != result.returncode
    assert "LADDER_NETWORK_KEY" in result.stderr


@pytest.mark.skipif(COMPOSE is None, reason="neither docker compose nor docker-compose installed")
def test_docker_compose_refuses_to_start_without_api_tokens():
    """The API listens on every interface of its container: never without tokens."""
    assert COMPOSE is not None
    env = {k: v for k, v in os.environ.items() if k != "LADDER_API_TOKENS"}
    env["LADDER_NETWORK_KEY"] = COMPOSE_ENV["LADDER_NETWORK_KEY"]
    result = subprocess.run(
        [*COMPOSE, "-f", str(DEPLOY / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert 0 != result.returncode
    assert "LADDER_API_TOKENS" in result.stderr


# -- Dockerfile --------------------------------------------------------------------------


def test_the_dockerfile_is_multi_stage_slim_non_root_with_the_ladder_entry_point():
    """Two python:3.11-slim stages, a numeric non-root user, ``ladder`` as the entry point."""
    lines = [
        line.strip()
        for line in (DEPLOY / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    froms = [line for line in lines if line.startswith("FROM ")]
    assert 2 == len(froms) and all("python:3.11-slim" in line for line in froms)
    (user,) = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert "0" != user.split(":")[0] and user.split(":")[0].isdigit()
    assert 'ENTRYPOINT ["ladder"]' in lines
    for line in lines:
        if line.startswith("COPY ") and "--from=" not in line:
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source


# -- Grafana -----------------------------------------------------------------------------


def test_the_grafana_dashboard_queries_only_metrics_the_worker_exports():
    """Every ``ladder_*`` name in a panel query is one the worker's registry exposes."""
    import json

    from prometheus_client import generate_latest

    from worker.observability.metrics import Metrics

    metrics = Metrics(ladders=["gammon42"])
    metrics.events.labels(ladder="gammon42", outcome="rated", reason="").inc()
    metrics.batch_seconds.labels(status="ok").observe(0.1)
    exported = set(re.findall(r"^(ladder_\w+)", generate_latest(metrics.registry).decode(), re.M))
    exported |= {
        "ladder_inbox_length",
        "ladder_queue_length",
        "ladder_staging_batches",
        "ladder_retry_scheduled_jobs",
        "ladder_started_jobs",
        "ladder_dead_letters",
        "ladder_redis_up",
    }
    dashboard = json.loads((DEPLOY / "grafana" / "ladder.json").read_text(encoding="utf-8"))
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\b(ladder_\w+)", target["expr"])
    }
    assert queried and queried <= exported
