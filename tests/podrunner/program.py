"""A test "image": serves its env and a file over HTTP on $PODRUNNER_BIND_ADDRESS:$PORT."""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

FILE = sys.argv[sys.argv.index("--file") + 1]


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path == "/healthz":
            body = b"ok"
        elif self.path == "/file":
            with open(FILE, "rb") as fh:
                body = fh.read()
        else:
            body = json.dumps(dict(os.environ)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


print("listening", flush=True)
HTTPServer((os.environ["PODRUNNER_BIND_ADDRESS"], int(os.environ.get("PORT", "8080"))), H).serve_forever()
