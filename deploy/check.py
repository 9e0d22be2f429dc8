#!/usr/bin/env python3
"""Checks deploy/: the Kubernetes manifests against minimal schemas and against each other,
the nginx and HAProxy templates rendered and checked by nginx -t and haproxy -c, and the
systemd unit's shape. Run by `scripts/fleet.sh lint` (and so by `scripts/fleet.sh test`).

Needs python3-yaml and python3-jsonschema (Debian packages), nginx and haproxy.
Usage: check.py DEPLOY_DIR
"""

import configparser
import os
import shutil
import subprocess
import sys
import tempfile

import jsonschema
import yaml

NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "maxLength": 253}
LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": NAME, "labels": LABELS, "annotations": LABELS},
}
PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
PORT_REF = {"anyOf": [PORT, {"type": "string", "pattern": r"^[a-z0-9-]{1,15}$"}]}


def object_schema(required, properties, closed=True):
    return {
        "type": "object",
        "required": required,
        "properties": properties,
        "additionalProperties": not closed,
    }


ENV_VAR = object_schema(
    ["name"],
    {
        "name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
        "value": {"type": "string"},
        "valueFrom": {"type": "object"},
    },
)
CONTAINER = object_schema(
    ["name", "image"],
    {
        "name": NAME,
        "image": {"type": "string", "minLength": 1},
        "args": {"type": "array", "items": {"type": "string"}},
        "command": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "array", "items": ENV_VAR},
        "envFrom": {"type": "array", "items": {"type": "object"}},
        "ports": {
            "type": "array",
            "items": object_schema(
                ["containerPort"],
                {
                    "name": {"type": "string", "pattern": r"^[a-z0-9-]{1,15}$"},
                    "containerPort": PORT,
                    "protocol": {"enum": ["TCP", "UDP", "SCTP"]},
                },
            ),
        },
        "readinessProbe": {"type": "object"},
        "livenessProbe": {"type": "object"},
        "lifecycle": {"type": "object"},
        "resources": {"type": "object"},
        "securityContext": {"type": "object"},
        "volumeMounts": {
            "type": "array",
            "items": object_schema(
                ["name", "mountPath"],
                {"name": NAME, "mountPath": {"type": "string"}, "readOnly": {"type": "boolean"}},
            ),
        },
    },
)
SCHEMAS = {
    ("apps/v1", "Deployment"): object_schema(
        ["apiVersion", "kind", "metadata", "spec"],
        {
            "apiVersion": {"const": "apps/v1"},
            "kind": {"const": "Deployment"},
            "metadata": METADATA,
            "spec": object_schema(
                ["selector", "template"],
                {
                    "replicas": {"type": "integer", "minimum": 0},
                    "selector": object_schema(["matchLabels"], {"matchLabels": LABELS}),
                    "strategy": {"type": "object"},
                    "template": object_schema(
                        ["metadata", "spec"],
                        {
                            "metadata": object_schema([], {"labels": LABELS}),
                            "spec": object_schema(
                                ["containers"],
                                {
                                    "containers": {"type": "array", "minItems": 1, "items": CONTAINER},
                                    "volumes": {"type": "array", "items": {"type": "object"}},
                                    "terminationGracePeriodSeconds": {"type": "integer", "minimum": 0},
                                },
                            ),
                        },
                    ),
                },
            ),
        },
    ),
    ("v1", "Service"): object_schema(
        ["apiVersion", "kind", "metadata", "spec"],
        {
            "apiVersion": {"const": "v1"},
            "kind": {"const": "Service"},
            "metadata": METADATA,
            "spec": object_schema(
                ["selector", "ports"],
                {
                    "type": {"enum": ["ClusterIP", "NodePort", "LoadBalancer"]},
                    "selector": LABELS,
                    "ports": {
                        "type": "array",
                        "minItems": 1,
                        "items": object_schema(
                            ["port"],
                            {
                                "name": {"type": "string"},
                                "port": PORT,
                                "targetPort": PORT_REF,
                                "protocol": {"enum": ["TCP", "UDP", "SCTP"]},
                            },
                        ),
                    },
                },
            ),
        },
    ),
    ("v1", "Secret"): object_schema(
        ["apiVersion", "kind", "metadata"],
        {
            "apiVersion": {"const": "v1"},
            "kind": {"const": "Secret"},
            "metadata": METADATA,
            "type": {"type": "string"},
            "stringData": {"type": "object", "additionalProperties": {"type": "string"}},
            "data": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    ),
    ("v1", "ConfigMap"): object_schema(
        ["apiVersion", "kind", "metadata", "data"],
        {
            "apiVersion": {"const": "v1"},
            "kind": {"const": "ConfigMap"},
            "metadata": METADATA,
            "data": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    ),
}

failures = []


def fail(where, message):
    failures.append(f"{where}: {message}")


def check_kubernetes(directory):
    docs = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith((".yaml", ".yml")):
            continue
        path = os.path.join(directory, name)
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                key = (doc.get("apiVersion"), doc.get("kind"))
                schema = SCHEMAS.get(key)
                if schema is None:
                    fail(name, f"no schema for {key}")
                    continue
                for error in jsonschema.Draft7Validator(schema).iter_errors(doc):
                    where = "/".join(str(p) for p in error.absolute_path)
                    fail(name, f"{where}: {error.message}")
                docs.append((name, doc))
    by_kind = {}
    for name, doc in docs:
        by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    for dname, dep in by_kind.get("Deployment", {}).items():
        spec = dep["spec"]
        selector = spec["selector"]["matchLabels"]
        labels = spec["template"]["metadata"].get("labels", {})
        if any(labels.get(k) != v for k, v in selector.items()):
            fail(dname, "the pod template's labels do not match the selector")
        pod = spec["template"]["spec"]
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        port_names = set()
        for c in pod["containers"]:
            port_names |= {p.get("name") for p in c.get("ports", [])}
            for m in c.get("volumeMounts", []):
                if m["name"] not in volumes:
                    fail(dname, f"volume mount {m['name']} names no volume")
            for ref in c.get("envFrom", []):
                cm = ref.get("configMapRef", {}).get("name")
                if cm and cm not in by_kind.get("ConfigMap", {}):
                    fail(dname, f"envFrom names ConfigMap {cm}, which is not in deploy/")
            args = c.get("args", [])
            if "--key-file" in args:
                key_file = args[args.index("--key-file") + 1]
                mounted = [m for m in c.get("volumeMounts", []) if key_file.startswith(m["mountPath"] + "/")]
                if not mounted:
                    fail(dname, f"--key-file {key_file} is not on a mounted volume")
        for v in volumes.values():
            secret = v.get("secret", {}).get("secretName")
            if secret and secret not in by_kind.get("Secret", {}):
                fail(dname, f"volume {v['name']} names Secret {secret}, which is not in deploy/")
        for sname, svc in by_kind.get("Service", {}).items():
            if all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()):
                for p in svc["spec"]["ports"]:
                    target = p.get("targetPort")
                    if isinstance(target, str) and target not in port_names:
                        fail(sname, f"targetPort {target} is no named port of {dname}")
    if not by_kind.get("Service"):
        fail("kubernetes", "no Service")
    return len(docs)


def tool_env():
    """The environment for nginx and haproxy: with the libraries of the cache that
    scripts/fleet.sh fetched them into, when it did."""
    env = dict(os.environ)
    if os.environ.get("ARCTERN_TOOL_LIBS"):
        env["LD_LIBRARY_PATH"] = os.environ["ARCTERN_TOOL_LIBS"]
    return env


def check_nginx(template):
    nginx = os.environ.get("ARCTERN_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
    with tempfile.TemporaryDirectory() as state:
        os.makedirs(os.path.join(state, "nginx-tmp"))
        text = open(template).read()
        servers = "        server 127.0.0.1:9101 max_fails=1 fail_timeout=2s;\n        server 127.0.0.1:9102 max_fails=1 fail_timeout=2s;"
        upstreams = "    upstream arctern_i1 {\n        server 127.0.0.1:9101;\n        server 127.0.0.1:9102 backup;\n    }"
        for k, v in {
            "@STATE@": state,
            "@WORKERS@": "1",
            "@LISTEN@": "127.0.0.1:9100",
            "@SERVERS@": servers,
            "@INSTANCE_UPSTREAMS@": upstreams,
            "@SESSION_MAP@": "        ~^i1\\.  arctern_i1;",
        }.items():
            text = text.replace(k, v)
        if "@" in "".join(line.split("#")[0] for line in text.splitlines()):
            fail("nginx", "a placeholder was left unrendered")
        conf = os.path.join(state, "nginx.conf")
        open(conf, "w").write(text)
        run = subprocess.run(
            [nginx, "-t", "-q", "-e", os.path.join(state, "error.log"), "-c", conf, "-p", state],
            capture_output=True, text=True, env=tool_env(),
        )
        if run.returncode != 0:
            fail("nginx", run.stderr.strip())


def check_haproxy(template):
    haproxy = os.environ.get("ARCTERN_HAPROXY") or shutil.which("haproxy") or "/usr/sbin/haproxy"
    text = open(template).read()
    text = text.replace("@LISTEN@", "127.0.0.1:9200").replace(
        "@SERVERS@", "    server i1 127.0.0.1:9101 check\n    server i2 127.0.0.1:9102 check"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".cfg") as f:
        f.write(text)
        f.flush()
        run = subprocess.run(
            [haproxy, "-c", "-q", "-f", f.name], capture_output=True, text=True, env=tool_env()
        )
        if run.returncode != 0:
            fail("haproxy", (run.stdout + run.stderr).strip())


def check_systemd(unit):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(unit)
    for section in ("Unit", "Service", "Install"):
        if not parser.has_section(section):
            fail("systemd", f"no [{section}] section")
    exec_start = parser.get("Service", "ExecStart", fallback="")
    if not exec_start.startswith("/") or " serve " not in exec_start:
        fail("systemd", "ExecStart must run `/…/arctern serve …` by absolute path")
    for flag in ("--key-file", "--instance-id", "--redis"):
        if flag not in exec_start:
            fail("systemd", f"ExecStart lacks {flag}")
    if "kill -HUP" not in parser.get("Service", "ExecReload", fallback=""):
        fail("systemd", "ExecReload must send SIGHUP (key reload)")


def main():
    deploy = sys.argv[1]
    count = check_kubernetes(os.path.join(deploy, "kubernetes"))
    check_nginx(os.path.join(deploy, "nginx", "arctern-fleet.conf.template"))
    check_haproxy(os.path.join(deploy, "haproxy", "arctern-fleet.cfg.template"))
    check_systemd(os.path.join(deploy, "systemd", "arctern@.service"))
    for f in failures:
        print(f"deploy check: {f}", file=sys.stderr)
    print(f"deploy check: {count} Kubernetes documents, nginx, HAProxy, systemd: "
          f"{'ok' if not failures else str(len(failures)) + ' problems'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
