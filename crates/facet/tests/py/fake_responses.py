"""A scripted stand-in for the OpenAI Responses API, on loopback, for driving the real
Codex CLI in crates/facet/tests/codex_live.rs (stdlib only).

The first POST /v1/responses is answered with one `exec_command` call running
`apply_patch <<'EOF' … EOF` with the patch in $PATCH (after $PREFIX, say `cd .. && `,
when set; with a `workdir` argument of $WORKDIR when set); every later one with a final
assistant message. Request bodies are appended to $LOG, one JSON line each, so the
test can read what Codex sent back (the hook's reason). Prints the port, then serves
until killed.
"""

import http.server
import json
import os

PATCH = os.environ["PATCH"]
LOG = os.environ["LOG"]
USAGE = {"input_tokens": 0, "input_tokens_details": None, "output_tokens": 0,
         "output_tokens_details": None, "total_tokens": 0}


def sse(events):
    return "".join(f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n" for ev in events).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    count = 0

    def log_message(self, *args):
        pass

    def reply(self, body, content_type):
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply(json.dumps({"data": [], "models": []}).encode(), "application/json")

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        with open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "body": raw.decode("utf-8", "replace")}) + "\n")
        Handler.count += 1
        rid = f"resp-{Handler.count}"
        if Handler.count == 1:
            command = os.environ.get("PREFIX", "") + "apply_patch <<'EOF'\n" + PATCH + "EOF\n"
            arguments = {"cmd": command}
            if "WORKDIR" in os.environ:
                arguments["workdir"] = os.environ["WORKDIR"]
            item = {"type": "function_call", "name": "exec_command", "call_id": "call-1",
                    "arguments": json.dumps(arguments)}
        else:
            item = {"type": "message", "role": "assistant", "id": f"msg-{Handler.count}",
                    "content": [{"type": "output_text", "text": "done"}]}
        self.reply(sse([
            {"type": "response.created", "response": {"id": rid}},
            {"type": "response.output_item.done", "item": item},
            {"type": "response.completed", "response": {"id": rid, "usage": USAGE}},
        ]), "text/event-stream")


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
