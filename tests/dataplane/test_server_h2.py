"""HTTP/2 and WebSocket end to end on loopback: h2c with prior knowledge and h2 by ALPN clients,
h2c, h2 and HTTP/1.1 destinations, gRPC (grpcio) with its trailers, flow control, resets,
concurrent streams, and the route features an HTTP/2 request goes through like an HTTP/1.1 one."""

from __future__ import annotations

import asyncio
import hashlib
import json
import ssl

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")
pytest.importorskip("h2")

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402

from tests.dataplane.docs import cluster, document, listener, route  # noqa: E402
from tests.dataplane.h2support import H2Client, run  # noqa: E402
from tests.dataplane.rules import covers  # noqa: E402
from tests.dataplane.support import (  # noqa: E402
    Issuer,
    free_port,
    header_lines,
    server_context,
    wait_for,
)

HOST = "grpc.example.com"


@pytest.fixture(scope="module")
def ca() -> Issuer:
    return Issuer()


def serve(harness, routes: list[dict], clusters: list[dict], tls_ca: Issuer | None = None,
          files: dict[str, bytes] | None = None) -> int:
    port = free_port()
    files = dict(files or {})
    certificates = []
    if tls_ca is not None:
        files["listener.pfx"] = tls_ca.pfx("listener", [HOST])
        certificates = [{"file": "listener.pfx", "hosts": [HOST], "default": True}]
    harness.write(document(routes, clusters, listeners=[listener(port, tls=tls_ca is not None)],
                           certificates=certificates), files)
    harness.start()
    wait_for(lambda: harness.dp is not None and harness.dp.ready)
    return port


def client_tls(ca: Issuer) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca.pem.decode())
    return ctx


async def one(port: int, method: str, path: str, authority: str = HOST, headers=(), body: bytes | None = None,
              tls: ssl.SSLContext | None = None):
    c = await H2Client.connect(port, tls, HOST if tls else None)
    try:
        return await c.request(method, path, authority, list(headers), body, scheme="https" if tls else "http")
    finally:
        await c.close()


# -- protocols ---------------------------------------------------------------------------------
@covers("proto.h2c", "proto.h2-upstream", "proto.match", "i.h2")
def test_h2c_prior_knowledge_to_an_h2c_destination(harness, h2backends) -> None:
    be = h2backends("h2")
    port = serve(harness, [route("r", 1, {"host": HOST, "path": "/pkg.Echo/", "pathKind": "Prefix"}),
                           route("other", 2, {"host": "other.example.com"}, directResponse={"status": 418,
                                                                                            "body": "teapot"})],
                 [cluster("be", [be.destination()])])
    r = run(one(port, "POST", "/pkg.Echo/Say?x=1", headers=[("x-custom", "v"), ("te", "trailers")], body=b"hi"))
    assert r.status == 200 and r.header("x-backend") == "h2"
    got = r.json()
    assert got["protocol"] == "HTTP/2" and got["method"] == "POST" and got["path"] == "/pkg.Echo/Say?x=1"
    assert got["authority"] == HOST and got["scheme"] == "http" and got["body_length"] == 2
    assert ["x-custom", "v"] in got["headers"] and ["te", "trailers"] in got["headers"]
    assert not any(k == "host" for k, _ in got["headers"])  # :authority carries it
    # routes match :authority and :path exactly as Host and the path of HTTP/1.1
    assert run(one(port, "GET", "/", authority="other.example.com")).status == 418
    assert run(one(port, "GET", "/elsewhere")).status == 404


@covers("proto.h2c", "proto.http1")
def test_the_protocol_is_told_from_first_bytes_split_across_reads(harness, backends) -> None:
    import socket
    import time

    import h2.config
    import h2.connection
    import h2.events

    be = backends("h1")
    port = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:  # "P", then "UT ...": HTTP/1.1
        sock.sendall(b"P")
        time.sleep(0.1)
        sock.sendall(b"UT /put HTTP/1.1\r\nHost: h.test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200") and b'"path": "/put"' in answer
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    preface = conn.data_to_send()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:  # the preface in three pieces
        for piece in (preface[:3], preface[3:20], preface[20:]):
            sock.sendall(piece)
            time.sleep(0.05)
        events = conn.receive_data(sock.recv(65536))
    assert any(isinstance(e, h2.events.RemoteSettingsChanged) for e in events)


@covers("proto.h2-fallback", "proto.match")
def test_h2c_client_to_an_http1_destination(harness, backends) -> None:
    be = backends("h1")
    port = serve(harness, [route("r", 1, {"host": HOST})], [cluster("be", [be.destination()])])
    r = run(one(port, "POST", "/a?b=1", authority=f"{HOST}:8080", headers=[("x-custom", "v"), ("cookie", "a=1"),
                                                                           ("cookie", "b=2")], body=b"hello"))
    assert r.status == 200 and r.header("x-backend") == "h1"
    got = r.json()
    assert got["path"] == "/a?b=1" and got["body"] == "hello" and got["method"] == "POST"
    assert header_lines(got, "host") == [f"{HOST}:8080"] and header_lines(got, "x-custom") == ["v"]
    assert header_lines(got, "cookie") == ["a=1; b=2"]  # HTTP/2's cookie fields, one HTTP/1.1 line
    # remembered: the next request goes straight to HTTP/1.1
    assert run(one(port, "GET", "/again")).json()["path"] == "/again"
    head = run(one(port, "HEAD", "/head"))
    assert head.status == 200 and head.body == b"" and int(head.header("content-length")) > 0


@covers("proto.h2-fallback")
def test_a_destination_silent_after_the_preface_is_reached_over_http1(harness, monkeypatch) -> None:
    import socketserver
    import threading

    from titanium_gateway.reference_dataplane import h2client

    monkeypatch.setattr(h2client, "PREFACE_TIMEOUT", 0.3)

    class Silent(socketserver.BaseRequestHandler):
        """Says nothing to an HTTP/2 preface; answers anything else as HTTP/1.1."""

        def handle(self) -> None:
            data = self.request.recv(65536)
            if data.startswith(b"PRI * HTTP/2.0"):
                self.request.recv(65536)  # (until the client gives up)
                return
            body = data.split(b"\r\n", 1)[0]
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                                 % (len(body), body))

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Silent)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = serve(harness, [route("r", 1)], [cluster("be", [{"id": "s", "address": "127.0.0.1",
                                                                "port": server.server_address[1], "weight": 1,
                                                                "useHttps": False}])])
        r = run(one(port, "GET", "/quiet"))
        assert r.status == 200 and r.body == b"GET /quiet HTTP/1.1"
    finally:
        server.shutdown()
        server.server_close()


@covers("proto.h2-alpn", "proto.h2-upstream")
def test_h2_by_alpn_to_h2c_and_http1_destinations(harness, ca, h2backends, backends) -> None:
    h2be, h1be = h2backends("h2"), backends("h1")
    port = serve(harness, [route("r2", 1, {"path": "/h2", "pathKind": "Prefix"}, clusterId="h2"),
                           route("r1", 2, {}, clusterId="h1")],
                 [cluster("h2", [h2be.destination()]), cluster("h1", [h1be.destination()])], tls_ca=ca)

    async def go():
        c = await H2Client.connect(port, client_tls(ca), HOST)
        try:
            assert c.alpn == "h2"
            a = await c.request("GET", "/h2/x", HOST, scheme="https")
            b = await c.request("GET", "/h1/x", HOST, scheme="https")
            return a, b
        finally:
            await c.close()

    a, b = run(go())
    assert a.status == 200 and a.json()["protocol"] == "HTTP/2" and a.json()["path"] == "/h2/x"
    assert a.json()["scheme"] == "http"  # h2c to a plain destination
    assert b.status == 200 and b.json()["backend"] == "h1" and header_lines(b.json(), "host") == [HOST]


@covers("proto.h2-upstream-tls", "c.tls", "c.tls.serverName", "c.tls.subjectAltNames")
@pytest.mark.parametrize("names, status", [
    ({"serverName": "backend.internal"}, 200),
    ({"serverName": "other.internal"}, 502),
    ({"serverName": "other.internal", "subjectAltNames": [{"type": "Hostname", "value": "backend.internal"}]}, 200),
    ({"subjectAltNames": [{"type": "Hostname", "value": "nope.internal"}]}, 502),
], ids=["serverName", "serverName-mismatch", "subjectAltNames", "subjectAltNames-mismatch"])
def test_h2_to_a_use_https_destination_with_the_cluster_tls(harness, ca, h2backends, names, status) -> None:
    up_ca = Issuer("Upstream CA")
    cert, key = up_ca.issue("backend", dns=["backend.internal"])
    be = h2backends("h2tls", tls=server_context(cert, key))
    tls = {"caFile": "up-ca.crt", **names}
    port = serve(harness, [route("r", 1)], [cluster("be", [be.destination(https=True)], httpClient={"tls": tls})],
                 files={"up-ca.crt": up_ca.pem})
    r = run(one(port, "GET", "/secure"))
    assert r.status == status
    if status == 200:
        assert r.json()["scheme"] == "https" and r.json()["protocol"] == "HTTP/2"
    else:
        assert be.requests == []  # never a byte of the request to a destination that failed the checks


@covers("proto.h2-upstream-tls", "files.reload")
def test_a_reloaded_ca_applies_to_new_h2_streams(harness, ca, h2backends) -> None:
    """Pooled HTTP/2 connections made with the previous config's TLS context take no new stream."""
    up_ca = Issuer("Upstream CA")
    cert, key = up_ca.issue("backend", dns=["backend.internal"])
    be = h2backends("h2tls", tls=server_context(cert, key))
    tls = {"caFile": "up-ca.crt", "serverName": "backend.internal"}
    doc = document([route("r", 1)], [cluster("be", [be.destination(https=True)], httpClient={"tls": tls})],
                   listeners=[listener(free_port())])
    port = doc["listeners"][0]["port"]
    harness.write(doc, {"up-ca.crt": up_ca.pem})
    harness.start()
    wait_for(lambda: harness.dp is not None and harness.dp.ready)
    assert run(one(port, "GET", "/before")).status == 200
    generation = harness.dp.state.generation
    harness.write(doc, {"up-ca.crt": Issuer("Another CA").pem})
    wait_for(lambda: harness.dp.state.generation > generation)
    assert run(one(port, "GET", "/after")).status == 502
    assert [r["path"] for r in be.requests] == ["/before"], be.requests


def test_h2_to_a_use_https_destination_signed_by_another_ca_answers_502(harness, ca, h2backends) -> None:
    other = Issuer("Other CA")
    cert, key = other.issue("backend", dns=["backend.internal"])
    be = h2backends("h2tls", tls=server_context(cert, key))
    tls = {"caFile": "up-ca.crt", "serverName": "backend.internal"}
    port = serve(harness, [route("r", 1)], [cluster("be", [be.destination(https=True)], httpClient={"tls": tls})],
                 files={"up-ca.crt": Issuer("Upstream CA").pem})
    assert run(one(port, "GET", "/secure")).status == 502
    assert be.requests == []


@covers("proto.trailers", "proto.direct")
def test_trailers_and_answers_of_the_data_plane_over_h2(harness, h2backends) -> None:
    be = h2backends("h2")
    port = serve(harness, [route("r", 1, {"path": "/grpc", "pathKind": "Prefix"}),
                           route("direct", 2, {"path": "/direct", "pathKind": "Exact"}, directResponse={"status": 503, "body": "down"}),
                           route("redir", 3, {"path": "/old", "pathKind": "Exact"}, redirect={"statusCode": 301, "host": "new.example.com",
                                                                         "scheme": "https"})],
                 [cluster("be", [be.destination()])])
    r = run(one(port, "POST", "/grpc/x", headers=[("te", "trailers"), ("x-echo-trailer", "grpc-status: 7"),
                                                   ("x-echo-trailer", "grpc-message: denied")], body=b"\0\0\0\0\0"))
    assert r.status == 200 and r.trailers == [("grpc-status", "7"), ("grpc-message", "denied")]
    d = run(one(port, "GET", "/direct"))
    assert d.status == 503 and d.body == b"down" and d.header("content-type") == "text/plain; charset=utf-8"
    x = run(one(port, "GET", "/old?q=1"))
    assert x.status == 301 and x.header("location") == "https://new.example.com/old?q=1"
    assert run(one(port, "GET", "/nothing")).status == 404


@covers("proto.flow")
def test_large_bodies_both_ways_under_flow_control(harness, h2backends) -> None:
    be = h2backends("h2")
    port = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])
    up = bytes(range(256)) * (6 * 4096)  # 6 MiB, far beyond every initial window
    r = run(one(port, "POST", "/big", headers=[("x-echo-size", str(5 << 20))], body=up))
    assert r.status == 200 and len(r.body) == 5 << 20 and r.body == b"x" * (5 << 20)
    got = be.requests[-1]
    assert got["body_length"] == len(up) and got["body_sha256"] == hashlib.sha256(up).hexdigest()


@covers("proto.reset")
def test_a_client_reset_reaches_the_destination_as_a_reset(harness, h2backends) -> None:
    be = h2backends("h2")
    port = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])

    async def go():
        c = await H2Client.connect(port)
        try:
            sid = await c.start("GET", "/held", HOST, [("x-echo-hold", "1")])
            await asyncio.get_running_loop().run_in_executor(None, lambda: be.wait(lambda: be.requests))
            await c.reset(sid)
            await asyncio.get_running_loop().run_in_executor(None, lambda: be.wait(lambda: "/held" in be.resets))
            # the connection goes on serving other streams
            return await c.request("GET", "/after", HOST)
        finally:
            await c.close()

    assert run(go()).status == 200
    assert be.resets == ["/held"]


@covers("proto.reset")
def test_a_destination_reset_reaches_the_client_as_a_reset(harness, h2backends) -> None:
    be = h2backends("h2")
    port = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])
    r = run(one(port, "GET", "/x", headers=[("x-echo-reset", "11")]))  # ENHANCE_YOUR_CALM
    assert r.status == 200 and r.reset == 11


@covers("proto.streams")
def test_a_stop_answers_the_streams_in_flight(harness, h2backends) -> None:
    be = h2backends("h2")
    port = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])

    async def go():
        c = await H2Client.connect(port)
        try:
            sid = await c.start("GET", "/slow", HOST, [("x-echo-delay", "0.5")])
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, lambda: be.wait(lambda: be.requests))
            stopping = loop.run_in_executor(None, harness.stop)
            response = await asyncio.wait_for(c.done[sid], 10)
            await stopping
            return response
        finally:
            await c.close()

    assert run(go()).status == 200


@covers("proto.streams")
def test_many_concurrent_streams_on_one_connection(harness, h2backends) -> None:
    be = h2backends("h2")
    port = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])

    async def go():
        c = await H2Client.connect(port)
        try:
            return await asyncio.gather(*(c.request("POST", f"/s/{i}", HOST, body=str(i).encode() * 1000)
                                          for i in range(150)))
        finally:
            await c.close()

    results = run(go())
    assert [r.status for r in results] == [200] * 150
    assert [r.json()["path"] for r in results] == [f"/s/{i}" for i in range(150)]
    assert all(r.json()["body_length"] == len(str(i)) * 1000 for i, r in enumerate(results))
    assert be.connections <= 2  # multiplexed upstream too


# -- the route features, through the same contract code -----------------------------------------
@covers("proto.features", "t.RequestHeaderSet", "t.Response", "t.PathPrefix", "t.HostSet")
def test_transforms_apply_to_h2_requests(harness, h2backends) -> None:
    be = h2backends("h2")
    transforms = [{"kind": "RequestHeaderSet", "parameters": {"name": "x-set", "value": "1"}},
                  {"kind": "ResponseHeaderSet", "parameters": {"name": "x-resp", "value": "2"}},
                  {"kind": "PathPrefix", "parameters": {"prefix": "/v1"}},
                  {"kind": "HostSet", "parameters": {"host": "upstream.internal"}}]
    port = serve(harness, [route("r", 1, transforms=transforms)], [cluster("be", [be.destination()])])
    r = run(one(port, "GET", "/a?b=1"))
    got = r.json()
    assert got["path"] == "/v1/a?b=1" and got["authority"] == "upstream.internal"
    assert ["x-set", "1"] in got["headers"] and r.header("x-resp") == "2"


@covers("proto.features", "p.IpAllowDeny")
def test_policies_answer_h2_requests(harness, h2backends) -> None:
    be = h2backends("h2")
    port = serve(harness, [route("r", 1, policies=[{"kind": "IpAllowDeny", "parameters": {"allow": ["10.0.0.0/8"]}}])],
                 [cluster("be", [be.destination()])])
    r = run(one(port, "GET", "/"))
    assert r.status == 403 and be.requests == []


@covers("proto.features", "route.mirror", "action.clusters")
def test_mirror_and_weighted_clusters_for_h2_requests(harness, h2backends) -> None:
    a, b, m = h2backends("a"), h2backends("b"), h2backends("mirror")
    port = serve(harness, [route("r", 1, clusters=[{"clusterId": "a", "weight": 1}, {"clusterId": "b", "weight": 1}],
                                 mirror={"clusterId": "m"})],
                 [cluster("a", [a.destination()]), cluster("b", [b.destination()]), cluster("m", [m.destination()])])

    async def go():
        c = await H2Client.connect(port)
        try:
            return [await c.request("POST", f"/w/{i}", HOST, body=b"copy") for i in range(30)]
        finally:
            await c.close()

    results = run(go())
    seen = {r.header("x-backend") for r in results}
    assert seen == {"a", "b"}
    m.wait(lambda: len(m.requests) == 30)
    assert all(r["protocol"] == "HTTP/2" and r["body_length"] == 4 for r in m.requests)


@covers("proto.features", "route.limits", "c.requestTimeout")
def test_timeouts_answer_504_over_h2_and_reset_the_destination_stream(harness, h2backends) -> None:
    be = h2backends("h2")
    port = serve(harness, [route("slow", 1, {"path": "/route", "pathKind": "Exact"}, limits={"requestTimeout": "00:00:00.300"}),
                           route("up", 2, {"path": "/cluster", "pathKind": "Exact"}, clusterId="limited")],
                 [cluster("be", [be.destination()]),
                  cluster("limited", [be.destination()], httpClient={"requestTimeout": "00:00:00.300"})])
    assert run(one(port, "GET", "/route", headers=[("x-echo-hold", "1")])).status == 504
    assert run(one(port, "GET", "/cluster", headers=[("x-echo-hold", "1")])).status == 504
    be.wait(lambda: sorted(be.resets) == ["/cluster", "/route"])


# -- gRPC (grpcio as client and server) ---------------------------------------------------------
def _grpc_server(grpc):
    """A gRPC server of raw bytes: pkg.Echo/Say (unary, trailer x-trailer, "fail" -> PERMISSION_DENIED),
    pkg.Echo/Count (server streaming), pkg.Echo/Chat (bidirectional: each message back, reversed)."""
    from concurrent import futures

    def unary(request: bytes, context) -> bytes:
        md = dict(context.invocation_metadata())
        context.set_trailing_metadata((("x-trailer", "t1"),))
        if request == b"fail":
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "not you")
        return b"echo:" + request + b":" + md.get("x-meta", "").encode()

    def stream(request: bytes, context):
        for i in range(int(request)):
            yield b"item-%d" % i

    def chat(requests, context):
        for message in requests:
            yield message[::-1]

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("pkg.Echo", {
        "Say": grpc.unary_unary_rpc_method_handler(unary),
        "Count": grpc.unary_stream_rpc_method_handler(stream),
        "Chat": grpc.stream_stream_rpc_method_handler(chat),
    }),))
    gport = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, gport


GRPC_OPTIONS = [("grpc.default_authority", HOST), ("grpc.enable_http_proxy", 0)]


@covers("proto.trailers", "proto.streams", "proto.h2-upstream")
def test_grpc_through_the_data_plane(harness) -> None:
    grpc = pytest.importorskip("grpc")
    server, gport = _grpc_server(grpc)
    try:
        port = serve(harness, [route("grpc", 1, {"host": HOST, "path": "/pkg.Echo/", "pathKind": "Prefix"})],
                     [cluster("be", [{"id": "g", "address": "127.0.0.1", "port": gport, "weight": 1,
                                      "useHttps": False}])])
        with grpc.insecure_channel(f"127.0.0.1:{port}", options=GRPC_OPTIONS) as channel:
            say = channel.unary_unary("/pkg.Echo/Say")
            reply, call = say.with_call(b"hello", metadata=(("x-meta", "m"),), timeout=10)
            assert reply == b"echo:hello:m" and call.code() == grpc.StatusCode.OK
            assert ("x-trailer", "t1") in tuple(call.trailing_metadata())
            with pytest.raises(grpc.RpcError) as err:
                say(b"fail", timeout=10)
            assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED and err.value.details() == "not you"
            items = list(channel.unary_stream("/pkg.Echo/Count")(b"5", timeout=10))
            assert items == [b"item-%d" % i for i in range(5)]
            with pytest.raises(grpc.RpcError) as err:  # no route for the method: 404 -> UNIMPLEMENTED
                channel.unary_unary("/other.Svc/M")(b"x", timeout=10)
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
            messages = [bytes([i % 256]) * (1000 + i * 997) for i in range(200)]  # ~20 MB each way
            replies = list(channel.stream_stream("/pkg.Echo/Chat")(iter(messages), timeout=30))
            assert replies == [m[::-1] for m in messages]
    finally:
        server.stop(0)


@covers("proto.h2-alpn")
def test_grpc_over_tls_by_alpn(harness, ca) -> None:
    grpc = pytest.importorskip("grpc")
    server, gport = _grpc_server(grpc)
    try:
        port = serve(harness, [route("grpc", 1, {"host": HOST})],
                     [cluster("be", [{"id": "g", "address": "127.0.0.1", "port": gport, "weight": 1,
                                      "useHttps": False}])], tls_ca=ca)
        credentials = grpc.ssl_channel_credentials(root_certificates=ca.pem)
        options = [*GRPC_OPTIONS, ("grpc.ssl_target_name_override", HOST)]
        with grpc.secure_channel(f"127.0.0.1:{port}", credentials, options=options) as channel:
            reply = channel.unary_unary("/pkg.Echo/Say")(b"tls", metadata=(("x-meta", "s"),), timeout=10)
            assert reply == b"echo:tls:s"
    finally:
        server.stop(0)


# -- HTTP/1.1 clients and WebSocket -------------------------------------------------------------
@covers("proto.http1")
def test_an_http1_client_is_forwarded_over_http1_even_to_an_h2c_capable_destination(harness, h2backends,
                                                                                     backends) -> None:
    import requests

    be = backends("h1")
    port = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])
    r = requests.get(f"http://127.0.0.1:{port}/x", headers={"Host": HOST}, timeout=5)
    assert r.status_code == 200 and r.raw.version == 11 and r.json()["backend"] == "h1"


@covers("proto.websocket")
def test_websocket_round_trip(harness) -> None:
    async def ws_handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"path": request.path_qs, "host": request.host}))
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.TEXT:
                await ws.send_str("echo:" + msg.data)
            elif msg.type == aiohttp.WSMsgType.BINARY:
                await ws.send_bytes(msg.data[::-1])
        return ws

    async def go():
        app = web.Application()
        app.router.add_get("/ws/{tail:.*}", ws_handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        bport = runner.addresses[0][1]
        port = await asyncio.get_running_loop().run_in_executor(None, lambda: serve(
            harness, [route("ws", 1, {"host": HOST, "path": "/ws", "pathKind": "Prefix"})],
            [cluster("be", [{"id": "ws", "address": "127.0.0.1", "port": bport, "weight": 1, "useHttps": False}])]))
        try:
            async with aiohttp.ClientSession() as session, \
                    session.ws_connect(f"http://127.0.0.1:{port}/ws/chat?room=1", headers={"Host": HOST}) as ws:
                hello = json.loads((await ws.receive(timeout=5)).data)
                await ws.send_str("hi")
                text = (await ws.receive(timeout=5)).data
                big = bytes(range(256)) * 4096  # 1 MiB in one message
                await ws.send_bytes(big)
                back = (await ws.receive(timeout=10)).data
                await ws.close()
            upgrade = {"Host": HOST, "Connection": "Upgrade", "Upgrade": "websocket"}
            async with aiohttp.ClientSession() as session, \
                    session.get(f"http://127.0.0.1:{port}/nows", headers=upgrade) as r:
                refused = r.status  # a refused upgrade is an ordinary answer
            return hello, text, back == big[::-1], refused
        finally:
            await runner.cleanup()

    hello, text, big_ok, refused = run(go())
    assert hello == {"path": "/ws/chat?room=1", "host": HOST}
    assert text == "echo:hi" and big_ok and refused == 404


@covers("proto.websocket", "listeners.decryptSsl", "c.useHttps")
def test_websocket_through_a_decrypting_listener_to_a_use_https_destination(harness, ca) -> None:
    up_ca = Issuer("Upstream CA")
    cert, key = up_ca.issue("backend", dns=["backend.internal"])

    async def ws_handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for msg in ws:
            await ws.send_str(f"{request.scheme}:{msg.data}")
        return ws

    async def go():
        app = web.Application()
        app.router.add_get("/ws", ws_handler)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_context(cert, key)).start()
        bport = runner.addresses[0][1]
        tls = {"caFile": "up-ca.crt", "serverName": "backend.internal"}
        port = await asyncio.get_running_loop().run_in_executor(None, lambda: serve(
            harness, [route("ws", 1, {"host": HOST})],
            [cluster("be", [{"id": "ws", "address": "127.0.0.1", "port": bport, "weight": 1, "useHttps": True}],
                     httpClient={"tls": tls})], tls_ca=ca, files={"up-ca.crt": up_ca.pem}))
        try:
            async with aiohttp.ClientSession() as session, \
                    session.ws_connect(f"wss://127.0.0.1:{port}/ws", ssl=client_tls(ca),
                                       server_hostname=HOST, headers={"Host": HOST}) as ws:
                await ws.send_str("hi")
                return (await ws.receive(timeout=5)).data
        finally:
            await runner.cleanup()

    assert run(go()) == "https:hi"
