"""A scripted stand-in for the Anthropic Messages API on loopback (stdlib only).

A request that offers the tool named in $TOOL and carries no tool_result yet is answered
with one tool_use of $TOOL with the JSON input in $INPUT; every other request with a
short text. Request bodies are appended to $LOG as JSON lines. Prints the port.
"""
import http.server, json, os

TOOL = os.environ["TOOL"]
INPUT = os.environ["INPUT"]
LOG = os.environ["LOG"]


def events(blocks, stop):
    out = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}}]
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            out.append({"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
            out.append({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        else:
            out.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            out.append({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": block["text"]}})
        out.append({"type": "content_block_stop", "index": index})
    out.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 1}})
    out.append({"type": "message_stop"})
    return out


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, body, content_type, status=200):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply(b"{}", "application/json")

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        with open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "body": raw.decode("utf-8", "replace")}) + "\n")
        try:
            request = json.loads(raw)
        except ValueError:
            request = {}
        if "count_tokens" in self.path:
            self.reply(json.dumps({"input_tokens": 10}).encode(), "application/json")
            return
        offered = [tool.get("name") for tool in request.get("tools", [])]
        answered = any(isinstance(part, dict) and part.get("type") == "tool_result"
                       for message in request.get("messages", [])
                       for part in (message.get("content") if isinstance(message.get("content"), list) else []))
        if TOOL in offered and not answered:
            blocks, stop = [{"type": "tool_use", "id": "toolu_1", "name": TOOL, "input": json.loads(INPUT)}], "tool_use"
        else:
            blocks, stop = [{"type": "text", "text": "done"}], "end_turn"
        if request.get("stream"):
            body = "".join(f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n" for ev in events(blocks, stop)).encode()
            self.reply(body, "text/event-stream")
        else:
            message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                       "content": blocks, "stop_reason": stop, "stop_sequence": None,
                       "usage": {"input_tokens": 1, "output_tokens": 1}}
            self.reply(json.dumps(message).encode(), "application/json")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
