#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/mock-model.py — a scripted model server for the agent e2e tests (stdlib only).
#
# Speaks the three wire protocols the real harnesses use: OpenAI chat-completions
# (POST .../chat/completions), OpenAI Responses (POST .../responses) and Anthropic messages
# (POST .../messages), each streaming (SSE) and not. The script is one turn deep: a request whose
# history holds no tool result is answered with a call of the harness's shell tool running
# --command; a request that carries a tool result gets a final text answer (--final). Requests
# without tools (titles, summaries) get the final text too.
#
# Listens on 127.0.0.1 only, on a free port, and writes the port to --port-file once it is bound.
# Every request is one JSON line in --log: method, path, protocol, streaming, the tool it called
# and whether the bearer/x-api-key matched --expect-token (the value itself is never logged).
#
# TLS mode (--tls-cert FILE --tls-key FILE, PEM): the same protocols over HTTPS, offering only
# http/1.1 by ALPN (as aisb's tlsgate does). Each connection first logs one line
# {"event": "tls", "sni", "alpn_offered" (the list in the client's hello, read from the raw
# ClientHello before the handshake), "alpn" (what was negotiated, null if none), "version"} or
# {"event": "tls", "error": ...} when the handshake failed (a client that does not trust the
# certificate); its requests' lines carry "tls": true and "alpn".
import argparse
import json
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time
import tlsserve
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOCK = threading.Lock()
SHELL_TOOLS = ("bash", "Bash", "shell", "exec_command", "shell_command", "local_shell")


def log(entry):
    if not ARGS.log:
        return
    with LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def tool_args(schema_props, command):
    """Arguments for a shell tool whose JSON-schema properties are @schema_props."""
    props = schema_props or {}
    if "cmd" in props:
        return {"cmd": command}
    cmd = props.get("command", {})
    if cmd.get("type") == "array":
        return {"command": ["bash", "-lc", command]}
    return {"command": command}


def pick_tool(tools, proto):
    """(name, properties) of the first shell-like tool in the request, or None."""
    for t in tools or []:
        if proto == "chat":
            fn = t.get("function", {})
            name, params = fn.get("name"), fn.get("parameters") or {}
        elif proto == "responses":
            name, params = t.get("name"), t.get("parameters") or {}
            if t.get("type") == "local_shell":
                name = "local_shell"
        else:
            name, params = t.get("name"), t.get("input_schema") or {}
        if name in SHELL_TOOLS:
            return name, params.get("properties") or {}
    return None


def has_tool_result(body, proto):
    if proto == "chat":
        return any(m.get("role") == "tool" for m in body.get("messages", []))
    if proto == "responses":
        items = body.get("input", [])
        return isinstance(items, list) and any(
            isinstance(i, dict) and i.get("type") in ("function_call_output", "local_shell_call_output",
                                                      "custom_tool_call_output")
            for i in items)
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in c):
            return True
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # quiet: the JSON log says what happened
        pass

    def auth_ok(self):
        if not ARGS.expect_token:
            return None
        bearer = self.headers.get("Authorization", "")
        key = self.headers.get("x-api-key", "")
        return bearer == "Bearer " + ARGS.expect_token or key == ARGS.expect_token

    def send(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, obj, name=None):
        out = ""
        if name:
            out += "event: %s\n" % name
        out += "data: %s\n\n" % (obj if isinstance(obj, str) else json.dumps(obj))
        self.wfile.write(out.encode())
        self.wfile.flush()

    def do_GET(self):
        # model listings some clients probe; anything else 404
        if self.path.rstrip("/").endswith("/models"):
            self.send(200, {"object": "list", "data": [{"id": ARGS.model, "object": "model"}]})
        else:
            self.send(404, {"error": {"message": "not found"}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self.send(400, {"error": {"message": "bad json"}})
            return
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            proto = "chat"
        elif path.endswith("/responses"):
            proto = "responses"
        elif path.endswith("/messages/count_tokens"):
            self.send(200, {"input_tokens": 10})
            return
        elif path.endswith("/messages"):
            proto = "anthropic"
        else:
            log({"method": "POST", "path": path, "proto": None})
            self.send(404, {"error": {"message": "not found"}})
            return
        stream = bool(body.get("stream"))
        tool = None if has_tool_result(body, proto) else pick_tool(body.get("tools"), proto)
        entry = {"method": "POST", "path": path, "proto": proto, "stream": stream,
                 "tool": tool[0] if tool else None, "auth_ok": self.auth_ok(),
                 "model": body.get("model"), "time": time.time()}
        if isinstance(self.request, ssl.SSLSocket):
            entry.update(tls=True, alpn=self.request.selected_alpn_protocol())
        log(entry)
        getattr(self, "answer_" + proto)(stream, tool)

    # ---- OpenAI chat-completions ------------------------------------------------------------
    def answer_chat(self, stream, tool):
        cid = "chatcmpl-mock"
        if tool:
            call = {"id": "call_mock1", "type": "function",
                    "function": {"name": tool[0], "arguments": json.dumps(tool_args(tool[1], ARGS.command))}}
            msg, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            msg, finish = {"role": "assistant", "content": ARGS.final}, "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not stream:
            self.send(200, {"id": cid, "object": "chat.completion", "created": int(time.time()),
                            "model": ARGS.model, "choices": [{"index": 0, "message": msg,
                                                              "finish_reason": finish}], "usage": usage})
            return
        self.sse_start()
        base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": ARGS.model}
        if tool:
            c = dict(msg["tool_calls"][0], index=0)
            self.event(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "tool_calls": [c]},
                                            "finish_reason": None}]))
        else:
            self.event(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                            "finish_reason": None}]))
            self.event(dict(base, choices=[{"index": 0, "delta": {"content": ARGS.final}, "finish_reason": None}]))
        self.event(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
        self.event(dict(base, choices=[], usage=usage))
        self.event("[DONE]")

    # ---- OpenAI Responses -------------------------------------------------------------------
    def answer_responses(self, stream, tool):
        rid = "resp_mock%d" % int(time.time() * 1000)
        if tool and tool[0] == "local_shell":
            item = {"type": "local_shell_call", "id": "lsh_mock1", "call_id": "call_mock1", "status": "completed",
                    "action": {"type": "exec", "command": ["bash", "-lc", ARGS.command]}}
        elif tool:
            item = {"type": "function_call", "id": "fc_mock1", "call_id": "call_mock1", "name": tool[0],
                    "arguments": json.dumps(tool_args(tool[1], ARGS.command)), "status": "completed"}
        else:
            item = {"type": "message", "id": "msg_mock1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": ARGS.final, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        resp = {"id": rid, "object": "response", "created_at": int(time.time()), "status": "completed",
                "model": ARGS.model, "output": [item], "usage": usage}
        if not stream:
            self.send(200, resp)
            return
        self.sse_start()
        seq = iter(range(1000))

        def ev(t, **kw):
            self.event(dict(type=t, sequence_number=next(seq), **kw), name=t)
        ev("response.created", response=dict(resp, status="in_progress", output=[]))
        if item["type"] == "message":
            ev("response.output_item.added", output_index=0, item=dict(item, content=[], status="in_progress"))
            ev("response.content_part.added", output_index=0, item_id=item["id"], content_index=0,
               part={"type": "output_text", "text": "", "annotations": []})
            ev("response.output_text.delta", output_index=0, item_id=item["id"], content_index=0, delta=ARGS.final)
            ev("response.output_text.done", output_index=0, item_id=item["id"], content_index=0, text=ARGS.final)
            ev("response.content_part.done", output_index=0, item_id=item["id"], content_index=0,
               part=item["content"][0])
        elif item["type"] == "function_call":
            ev("response.output_item.added", output_index=0, item=dict(item, arguments="", status="in_progress"))
            ev("response.function_call_arguments.delta", output_index=0, item_id=item["id"], delta=item["arguments"])
            ev("response.function_call_arguments.done", output_index=0, item_id=item["id"],
               arguments=item["arguments"])
        else:
            ev("response.output_item.added", output_index=0, item=item)
        ev("response.output_item.done", output_index=0, item=item)
        ev("response.completed", response=resp)

    # ---- Anthropic messages -----------------------------------------------------------------
    def answer_anthropic(self, stream, tool):
        mid = "msg_mock%d" % int(time.time() * 1000)
        if tool:
            block = {"type": "tool_use", "id": "toolu_mock1", "name": tool[0],
                     "input": tool_args(tool[1], ARGS.command)}
            stop = "tool_use"
        else:
            block, stop = {"type": "text", "text": ARGS.final}, "end_turn"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        msg = {"id": mid, "type": "message", "role": "assistant", "model": ARGS.model, "content": [block],
               "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not stream:
            self.send(200, msg)
            return
        self.sse_start()
        self.event({"type": "message_start", "message": dict(msg, content=[], stop_reason=None)}, "message_start")
        if tool:
            self.event({"type": "content_block_start", "index": 0, "content_block": dict(block, input={})},
                       "content_block_start")
            self.event({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
                       "content_block_delta")
        else:
            self.event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                       "content_block_start")
            self.event({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": ARGS.final}}, "content_block_delta")
        self.event({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self.event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5}}, "message_delta")
        self.event({"type": "message_stop"}, "message_stop")


def hello_fields(data):
    """(sni, [alpn offered]) from the raw bytes of a TLS ClientHello record; (None, None) when
    @data is not one. Bounded by len(@data): a short or odd hello gives what was parsed."""
    sni, alpn = None, None
    try:
        if data[0] != 0x16 or data[5] != 0x01:
            return None, None
        p = 5 + 4 + 2 + 32                      # record head, handshake head, version, random
        p += 1 + data[p]                        # session id
        p += 2 + struct.unpack_from("!H", data, p)[0]  # cipher suites
        p += 1 + data[p]                        # compression methods
        end = p + 2 + struct.unpack_from("!H", data, p)[0]
        p += 2
        while p + 4 <= min(end, len(data)):
            etype, elen = struct.unpack_from("!HH", data, p)
            ext = data[p + 4:p + 4 + elen]
            p += 4 + elen
            if etype == 0 and len(ext) >= 5:    # server_name: list len, type, name len, name
                n = struct.unpack_from("!H", ext, 3)[0]
                sni = ext[5:5 + n].decode(errors="replace")
            elif etype == 16 and len(ext) >= 2:  # ALPN: list len, then (len, name)...
                alpn, q = [], 2
                while q < len(ext):
                    alpn.append(ext[q + 1:q + 1 + ext[q]].decode(errors="replace"))
                    q += 1 + ext[q]
    except (IndexError, struct.error):
        pass
    return sni, alpn


def peek_hello(sock, timeout=5.0):
    """The client's first TLS record, peeked (left in the socket for the handshake)."""
    deadline, data, need = time.time() + timeout, b"", 5
    while time.time() < deadline:
        if not select.select([sock], [], [], max(0.0, deadline - time.time()))[0]:
            break
        data = sock.recv(16384 + 5, socket.MSG_PEEK)
        if not data:
            break
        if len(data) >= 5:
            need = 5 + struct.unpack_from("!H", data, 3)[0]
        if len(data) >= need:
            break
        time.sleep(0.01)  # the rest of the record is on its way; peek returns at once
    return data


def hello_facts(request):
    """The SNI and the ALPN list the client offered, from its raw ClientHello."""
    sni, offered = hello_fields(peek_hello(request))
    return {"sni": sni, "alpn_offered": offered}


def tls_logged(facts, conn, error):
    """Every handshake is a line of the log: what the client offered, and what was agreed."""
    if conn is None:
        log({"event": "tls", **facts, "error": error})
    else:
        log({"event": "tls", **facts, "alpn": conn.selected_alpn_protocol(), "version": conn.version()})


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log")
    ap.add_argument("--command", default="echo bridged > agent-proof.txt")
    ap.add_argument("--final", default="MOCK-DONE")
    ap.add_argument("--model", default="mock-model")
    ap.add_argument("--expect-token")
    ap.add_argument("--tls-cert", help="serve HTTPS with this PEM certificate (chain)")
    ap.add_argument("--tls-key", help="the certificate's PEM key")
    ARGS = ap.parse_args()
    if bool(ARGS.tls_cert) != bool(ARGS.tls_key):
        ap.error("--tls-cert and --tls-key go together")
    if ARGS.tls_cert:
        srv = tlsserve.server(("127.0.0.1", 0), Handler, ARGS.tls_cert, ARGS.tls_key, tls_logged, hello_facts)
    else:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
