#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# oci-layout.py — write an OCI image layout (image-spec 1.1) from layer tarballs, reproducibly.
# usage: oci-layout.py OUTDIR --tag TAG [--env K=V]... [--cmd ARG]... [--workdir DIR] [--wrong-diff-id] LAYER...
# --wrong-diff-id: the first layer's diff_id names other bytes (a config that lies)
# Layers are used as they are (plain tar, or gzip / zstd by their magic or .gz / .zst name); the config's diff_ids
# are the sha256 of the uncompressed tars. Adding a second tag to an existing layout keeps the first.
import argparse, gzip, hashlib, json, os, shutil, subprocess, sys

def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()

def put(out, data):
    d = sha(data)
    p = os.path.join(out, "blobs", "sha256", d[7:])
    with open(p, "wb") as f:
        f.write(data)
    return d, len(data)

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--tag", default="latest")
ap.add_argument("--env", action="append", default=[])
ap.add_argument("--cmd", action="append", default=None)
ap.add_argument("--entrypoint", action="append", default=None)
ap.add_argument("--workdir", default="")
ap.add_argument("--arch", default="amd64")
ap.add_argument("--wrong-diff-id", action="store_true")
ap.add_argument("layers", nargs="*")
a = ap.parse_intermixed_args()

os.makedirs(os.path.join(a.out, "blobs", "sha256"), exist_ok=True)
with open(os.path.join(a.out, "oci-layout"), "w") as f:
    f.write('{"imageLayoutVersion":"1.0.0"}')
layers, diff_ids = [], []
for l in a.layers:
    data = open(l, "rb").read()
    # by the bytes (a blob path has no suffix), else by the name
    if data[:2] == b"\x1f\x8b" or l.endswith(".gz"):
        raw, mt = gzip.decompress(data), "application/vnd.oci.image.layer.v1.tar+gzip"
    elif data[:4] == b"\x28\xb5\x2f\xfd" or l.endswith(".zst"):
        raw = subprocess.run(["zstd", "-dc", l], check=True, capture_output=True).stdout
        mt = "application/vnd.oci.image.layer.v1.tar+zstd"
    else:
        raw, mt = data, "application/vnd.oci.image.layer.v1.tar"
    d, n = put(a.out, data)
    layers.append({"mediaType": mt, "digest": d, "size": n})
    diff_ids.append(sha(raw))
if a.wrong_diff_id:
    diff_ids[0] = sha(b"not the layer")
cfg = {"architecture": a.arch, "os": "linux",
       "config": {"Env": a.env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                  "WorkingDir": a.workdir},
       "rootfs": {"type": "layers", "diff_ids": diff_ids},
       "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "oci-layout.py"}]}
if a.cmd: cfg["config"]["Cmd"] = a.cmd
if a.entrypoint: cfg["config"]["Entrypoint"] = a.entrypoint
cd, cn = put(a.out, json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode())
man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
       "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cn},
       "layers": layers}
md, mn = put(a.out, json.dumps(man, sort_keys=True, separators=(",", ":")).encode())
ip = os.path.join(a.out, "index.json")
idx = json.load(open(ip)) if os.path.exists(ip) else {"schemaVersion": 2, "manifests": []}
idx["manifests"] = [m for m in idx["manifests"]
                    if m.get("annotations", {}).get("org.opencontainers.image.ref.name") != a.tag]
idx["manifests"].append({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": mn,
                         "annotations": {"org.opencontainers.image.ref.name": a.tag}})
with open(ip, "w") as f:
    json.dump(idx, f, sort_keys=True, separators=(",", ":"))
print(md)
