"""The Python SDK's remote image builds, driven against one base URL (the emulator, or the gateway in front of it).

Requests are the SDK's own request models (hyperbrowser/models/sandbox.py of the snapshot given as argv[3]) dumped as
the SDK dumps them (by alias, without None); answers are parsed with the SDK's answer models, so a field the SDK does
not expect, or a shape it cannot parse, fails here. The calls are the ones the SDK's SandboxManager makes for
build_image_from_docker_image (reuse, then a manifest build of layers) and build_image_from_dockerfile(remote=True)
(a context manifest of bundles): create, PUT each of `uploads[]` to its presigned URL as given, complete, poll.
(The snapshot holds the SDK's models only, not its HTTP client: the transport here is the standard library's.)

Prints one JSON document: every step's request body, status and parsed answer, with ids, times, ports and tokens
replaced by stable names, so that a run direct and a run through the gateway can be compared whole.

usage: image_build.py BASE_URL API_KEY SDK_DIR WORK_DIR
"""

import base64
import gzip
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import time
import urllib.error
import urllib.request

BASE, KEY, SDK_DIR, WORK = sys.argv[1:5]
sys.path.insert(0, SDK_DIR)

from hyperbrowser.models.sandbox import (  # noqa: E402
    CompleteSandboxImageBuildParams,
    CreateSandboxImageBuildParams,
    ReuseSandboxDockerImageParams,
    SandboxBuildContextBundle,
    SandboxBuildContextManifest,
    SandboxDockerImageConfig,
    SandboxDockerImageLayer,
    SandboxDockerImageManifest,
    SandboxDockerImageReuseResult,
    SandboxImageBuild,
    SandboxImageBuildCreateResult,
    SandboxImageInit,
)

steps = []


def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def canonical(model) -> bytes:
    return json.dumps(dump(model), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{BASE}/api{path}", data=data, method=method)
    req.add_header("x-api-key", KEY)
    if data is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def put(upload, data: bytes):
    """One of `uploads[]`, sent as the SDK sends it: its method, its headers, and the bytes, to its URL as given."""
    headers = dict(upload.headers or {})
    headers.setdefault("content-length", str(len(data)))
    req = urllib.request.Request(upload.url, data=data, method=(upload.method or "PUT").upper(), headers=headers)
    with urllib.request.urlopen(req, timeout=60) as res:
        return res.status


def step(name, method, path, request_model, answer_model):
    body = dump(request_model) if request_model is not None else None
    status, answer = call(method, path, body)
    parsed = answer_model(**answer) if status < 300 and answer_model is not None else None
    steps.append({"step": name, "request": body, "status": status, "answer": dump(parsed) if parsed else answer})
    if status >= 300:
        raise SystemExit(f"{name}: HTTP {status}: {answer}")
    return parsed


def wait(build_id, name):
    for _ in range(240):
        status, answer = call("GET", f"/images/builds/{build_id}")
        build = SandboxImageBuild(**answer["build"])
        if build.status in ("completed", "failed", "canceled"):
            steps.append({"step": f"{name}.wait", "status": status, "answer": dump(build)})
            if build.status != "completed":
                raise SystemExit(f"{name}: build {build.status}: {build.error_code} {build.error_message}")
            return build
        time.sleep(0.25)
    raise SystemExit(f"{name}: build did not finish")


def upload_missing(name, result, artifacts):
    sent = []
    for upload in result.uploads:
        digest = (upload.sha256 or "").lower()
        if digest not in artifacts:
            raise SystemExit(f"{name}: server requested unknown blob {digest}")
        sent.append({"sha256": digest, "status": put(upload, artifacts[digest]), "method": upload.method})
    steps.append({"step": f"{name}.uploads", "sent": sent})


def tar_gz(files, mtime=0) -> bytes:
    """A deterministic tar.gz (the SDK's bundles: PAX, uid/gid 0, mtime 0, gzip mtime 0)."""
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=1, mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name, content in files:
                info = tarfile.TarInfo(name)
                if content is None:
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    info.name = name.rstrip("/") + "/"
                    archive.addfile(info)
                else:
                    info.size = len(content)
                    info.mode = 0o644
                    info.mtime = mtime
                    archive.addfile(info, io.BytesIO(content))
    return raw.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ── build_image_from_docker_image: reuse (a miss), then a manifest build of the image's layers ──
layer = tar_gz([("opt", None), ("opt/app", None), ("opt/app/layer.txt", b"from a docker layer\n")])
config = json.dumps(
    {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": ["PATH=/usr/bin", "GREETING=hello"], "Cmd": ["sleep", "30"], "WorkingDir": "/opt/app"},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(gzip.decompress(layer))]},
    },
    separators=(",", ":"),
).encode()
image_digest = "sha256:" + sha(config)
image_manifest = SandboxDockerImageManifest(
    version=1,
    image_digest=image_digest,
    config=SandboxDockerImageConfig(sha256=sha(config), size_bytes=len(config), data_base64=base64.b64encode(config).decode()),
    layers=[SandboxDockerImageLayer(sha256=sha(layer), size_bytes=len(layer))],
)
manifest_bytes = canonical(image_manifest)

miss = step(
    "image.reuse.miss",
    "POST",
    "/images/builds/reuse",
    ReuseSandboxDockerImageParams(image_name="py-image", source_image_digest=image_digest, source_platform="linux/amd64"),
    SandboxDockerImageReuseResult,
)
assert miss.hit is False, miss
created = step(
    "image.create",
    "POST",
    "/images/builds",
    CreateSandboxImageBuildParams(
        image_name="py-image",
        input_sha256=sha(manifest_bytes),
        input_size_bytes=len(manifest_bytes),
        input_format="docker_image_manifest_v1",
        source_platform="linux/amd64",
        image_config_user="",
        image_init=SandboxImageInit(env={"GREETING": "hello"}, args=["sleep", "30"], working_dir="/opt/app"),
        docker_image_manifest=image_manifest,
    ),
    SandboxImageBuildCreateResult,
)
assert len(created.uploads) == 1, created.uploads
upload_missing("image", created, {sha(layer): layer})
step(
    "image.complete",
    "POST",
    f"/images/builds/{created.build.id}/complete",
    CompleteSandboxImageBuildParams(input_sha256=sha(manifest_bytes), input_size_bytes=len(manifest_bytes), input_format="docker_image_manifest_v1"),
    None,
)
wait(created.build.id, "image")

# The same Docker image again, under another name: an exact hit, no upload at all.
hit = step(
    "image.reuse.hit",
    "POST",
    "/images/builds/reuse",
    ReuseSandboxDockerImageParams(image_name="py-image-again", source_image_digest=image_digest, source_platform="linux/amd64"),
    SandboxDockerImageReuseResult,
)
assert hit.hit is True and hit.build is not None and hit.build.status == "completed", hit

# ── build_image_from_dockerfile(remote=True): the context as a manifest of bundles ──
dockerfile = b'FROM debian:bookworm\nWORKDIR /srv\nCOPY app/ /srv/app/\nENV MODE=context\nRUN echo not-run-here\nCMD ["sleep", "60"]\n'
bundle = tar_gz([("Dockerfile", dockerfile), ("app", None), ("app/hello.txt", b"hello from the build context\n")])
context_manifest = SandboxBuildContextManifest(
    version=1,
    dockerfile_path="Dockerfile",
    context_mode="full",
    fallback_reason="requested_full_context",
    bundles=[SandboxBuildContextBundle(sha256=sha(bundle), size_bytes=len(bundle), uncompressed_size_bytes=len(gzip.decompress(bundle)), entry_count=3)],
)
context_bytes = canonical(context_manifest)


def context_build(name, image_name):
    result = step(
        f"{name}.create",
        "POST",
        "/images/builds",
        CreateSandboxImageBuildParams(
            image_name=image_name,
            input_sha256=sha(context_bytes),
            input_size_bytes=len(context_bytes),
            input_format="dockerfile_context_manifest_v1",
            source_platform="linux/amd64",
            dockerfile_path="Dockerfile",
            image_init=SandboxImageInit(working_dir="/srv"),
            context_manifest=context_manifest,
        ),
        SandboxImageBuildCreateResult,
    )
    upload_missing(name, result, {sha(bundle): bundle})
    step(
        f"{name}.complete",
        "POST",
        f"/images/builds/{result.build.id}/complete",
        CompleteSandboxImageBuildParams(input_sha256=sha(context_bytes), input_size_bytes=len(context_bytes), input_format="dockerfile_context_manifest_v1"),
        None,
    )
    wait(result.build.id, name)
    return result


first = context_build("context", "py-context")
assert len(first.uploads) == 1, first.uploads
# The same context again: its bundle is stored, so nothing is asked for.
again = context_build("context.again", "py-context-again")
assert again.uploads == [], again.uploads

# ── normalised: ids, times, hosts, ports and tokens by stable names ──
text = json.dumps(steps, sort_keys=True)
names = {}


def name_of(kind):
    def sub(m):
        return names.setdefault(m.group(0), f"<{kind}{len([k for k in names.values() if k.startswith('<' + kind)]) + 1}>")

    return sub


text = re.sub(r"ibld_[0-9a-f]+", name_of("build"), text)
text = re.sub(r"img_[0-9a-f]+", name_of("image"), text)
text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", "<time>", text)
text = re.sub(r"https?://[^/\"]+", "<storage>", text)
text = re.sub(r"token=[^\"&]+", "token=<token>", text)
print(text)
