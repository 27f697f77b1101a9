#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# reg-put.py — push an OCI layout's image to a plain-HTTP registry on 127.0.0.1 exactly as given:
# its blobs byte for byte, and a manifest whose media types are the ones asked for (skopeo and
# podman 4.3 recompress an uncompressed layer on push, so they cannot make every type the specs
# define). Distribution spec: POST /v2/NAME/blobs/uploads/, PUT ?digest=, PUT /v2/NAME/manifests/TAG.
# usage: reg-put.py LAYOUT TAG 127.0.0.1:PORT/NAME:TAG [--layer-type MT] [--docker] [--urls URL]
#                   [--no-layers]
#   --docker: a Docker v2s2 manifest (and config type) instead of the OCI one
#   --urls URL: each layer descriptor gets "urls": [URL] (a foreign layer's other source)
#   --no-layers: the layer blobs are not uploaded (only the config and the manifest)
import argparse, hashlib, json, os, sys, urllib.parse, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("layout")
ap.add_argument("tag")
ap.add_argument("dest")
ap.add_argument("--layer-type", default=None)
ap.add_argument("--docker", action="store_true")
ap.add_argument("--urls", default=None)
ap.add_argument("--no-layers", action="store_true")
a = ap.parse_args()

host, rest = a.dest.split("/", 1)
name, dtag = rest.rsplit(":", 1)
assert host.startswith("127.0.0.1:"), "127.0.0.1 only"
base = "http://" + host

def blob(d):
    return open(os.path.join(a.layout, "blobs", "sha256", d[7:]), "rb").read()

def req(method, url, data=None, ctype=None):
    r = urllib.request.Request(url, data=data, method=method)
    if ctype:
        r.add_header("Content-Type", ctype)
    return urllib.request.urlopen(r, timeout=30)

def put_blob(d):
    with req("POST", f"{base}/v2/{name}/blobs/uploads/", b"") as r:
        loc = r.headers["Location"]
    loc = urllib.parse.urljoin(base, loc)
    sep = "&" if "?" in loc else "?"
    req("PUT", f"{loc}{sep}digest={d}", blob(d), "application/octet-stream").close()

idx = json.load(open(os.path.join(a.layout, "index.json")))
md = [m for m in idx["manifests"]
      if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == a.tag][0]["digest"]
man = json.loads(blob(md))
put_blob(man["config"]["digest"])
for l in man["layers"]:
    if not a.no_layers:
        put_blob(l["digest"])
    if a.layer_type:
        l["mediaType"] = a.layer_type
    if a.urls:
        l["urls"] = [a.urls]
if a.docker:
    man["mediaType"] = "application/vnd.docker.distribution.manifest.v2+json"
    man["config"]["mediaType"] = "application/vnd.docker.container.image.v1+json"
body = json.dumps(man, sort_keys=True, separators=(",", ":")).encode()
req("PUT", f"{base}/v2/{name}/manifests/{dtag}", body, man["mediaType"]).close()
print("sha256:" + hashlib.sha256(body).hexdigest())
