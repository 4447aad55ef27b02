"""The gRPC mode of the Gateway API project's echo-basic image (``GRPC_ECHO_SERVER`` set), for the
local cluster (``make dev``'s gRPC backend, examples/grpc/).

echo-basic then serves ``gateway_api_conformance.echo_basic.grpcecho.GrpcEcho`` (methods Echo,
EchoTwo, EchoThree) in cleartext HTTP/2 on ``$HTTP_PORT`` (3000): each answers an EchoResponse
whose ``assertions`` name the method called, the request's metadata, its ``:authority`` and the
pod that answered (``POD_NAME``, ``NAMESPACE``, ``SERVICE_NAME``, ``INGRESS_NAME``). This is that
service from grpcio, its messages made by the protobuf runtime from the same definitions as
echo-basic's ``grpcecho.proto`` (no generated code). A method it does not have is answered
``UNIMPLEMENTED`` by grpcio, as by the real one. Its TLS port is not served.

``python3 -m tools.podrunner.shims.grpcecho`` runs it; ``tools.podrunner.shims.echo`` hands over
to it when ``GRPC_ECHO_SERVER`` is set, as echo-basic does. ``python3 -m
tools.podrunner.shims.grpcecho call HOST:PORT --authority NAME [--method Echo]`` is a client of
it: one call (cleartext HTTP/2, prior knowledge), printed as JSON: the status code and message,
the response headers and trailers, and the answer.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from concurrent import futures
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

PACKAGE = "gateway_api_conformance.echo_basic.grpcecho"
SERVICE = f"{PACKAGE}.GrpcEcho"
METHODS = ("Echo", "EchoTwo", "EchoThree")

_STRING, _MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_STRING, descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
_OPTIONAL, _REPEATED = (descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                        descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
#: grpcecho.proto's messages: name -> [(field, number, type, message type or "", repeated)]
_MESSAGES: dict[str, list[tuple[str, int, int, str, bool]]] = {
    "Header": [("key", 1, _STRING, "", False), ("value", 2, _STRING, "", False)],
    "Context": [("namespace", 1, _STRING, "", False), ("ingress", 2, _STRING, "", False),
                ("service_name", 3, _STRING, "", False), ("pod", 4, _STRING, "", False)],
    "TLSAssertions": [("version", 1, _STRING, "", False), ("negotiated_protocol", 2, _STRING, "", False),
                      ("server_name", 3, _STRING, "", False), ("cipher_suite", 4, _STRING, "", False),
                      ("peer_certificates", 5, _STRING, "", True)],
    "Assertions": [("fully_qualified_method", 1, _STRING, "", False), ("headers", 2, _MESSAGE, "Header", True),
                   ("authority", 3, _STRING, "", False), ("context", 4, _MESSAGE, "Context", False),
                   ("tls_assertions", 5, _MESSAGE, "TLSAssertions", False)],
    "EchoRequest": [],
    "EchoResponse": [("assertions", 1, _MESSAGE, "Assertions", False), ("request", 2, _MESSAGE, "EchoRequest", False)],
}


def _messages() -> dict[str, Any]:
    """The message classes of grpcecho.proto, by name."""
    proto = descriptor_pb2.FileDescriptorProto(name="grpcecho.proto", package=PACKAGE, syntax="proto3")
    for name, fields in _MESSAGES.items():
        msg = proto.message_type.add(name=name)
        for field, number, kind, type_name, repeated in fields:
            msg.field.add(name=field, number=number, type=kind, label=_REPEATED if repeated else _OPTIONAL,
                          type_name=f".{PACKAGE}.{type_name}" if type_name else None)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
            for name in _MESSAGES}


MESSAGES = _messages()
EchoRequest = MESSAGES["EchoRequest"]
EchoResponse = MESSAGES["EchoResponse"]


def method_path(method: str) -> str:
    return f"/{SERVICE}/{method}"


def echo(method: str, request: Any, context: grpc.ServicerContext) -> Any:
    """What echo-basic's GrpcEcho answers: the call as the server received it."""
    metadata = list(context.invocation_metadata())
    authority = next((v for k, v in metadata if k == ":authority"), "")
    response = EchoResponse()
    a = response.assertions
    a.fully_qualified_method = method_path(method)
    for key, value in metadata:
        a.headers.add(key=key, value=value if isinstance(value, str) else value.decode("latin-1"))
    a.authority = authority
    a.context.namespace = os.environ.get("NAMESPACE", "")
    a.context.ingress = os.environ.get("INGRESS_NAME", "")
    a.context.service_name = os.environ.get("SERVICE_NAME", "")
    a.context.pod = os.environ.get("POD_NAME", "")
    response.request.CopyFrom(request)
    print(f"Received over plaintext: {method_path(method)} for {authority}", flush=True)
    return response


def handler() -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(SERVICE, {
        method: grpc.unary_unary_rpc_method_handler(
            lambda request, context, method=method: echo(method, request, context),
            request_deserializer=EchoRequest.FromString, response_serializer=EchoResponse.SerializeToString)
        for method in METHODS})


def serve(address: str) -> tuple[grpc.Server, int]:
    """The server started on ``address`` (host:port); the port it bound."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler(),))
    port = server.add_insecure_port(address)
    server.start()
    return server, port


def call(target: str, authority: str, method: str = "Echo", metadata: tuple[tuple[str, str], ...] = (),
         timeout: float = 10) -> dict[str, Any]:
    """One call of ``method`` to ``target`` with ``:authority`` ``authority``: its status code and
    message, response headers, trailers (grpcio keeps grpc-status and grpc-message out of them: they
    are the code and message) and the answer as JSON (None when the call failed)."""
    with grpc.insecure_channel(target, options=[("grpc.default_authority", authority)]) as channel:
        stub = channel.unary_unary(method_path(method), request_serializer=EchoRequest.SerializeToString,
                                   response_deserializer=EchoResponse.FromString)
        try:
            response, c = stub.with_call(EchoRequest(), metadata=metadata, timeout=timeout)
            answer: dict[str, Any] | None = json_format.MessageToDict(response)
        except grpc.RpcError as e:
            c, answer = e, None
        return {"code": c.code().name, "message": c.details() or "",
                "headers": [list(kv) for kv in c.initial_metadata() or ()],
                "trailers": [list(kv) for kv in c.trailing_metadata() or ()], "answer": answer}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.podrunner.shims.grpcecho")
    sub = ap.add_subparsers(dest="command")
    c = sub.add_parser("call", help="call the echo service at HOST:PORT and print the outcome as JSON")
    c.add_argument("target", help="HOST:PORT, e.g. the Gateway's address and port 80")
    c.add_argument("--authority", required=True, help="the :authority (the route's hostname)")
    c.add_argument("--method", default="Echo", help=f"one of {', '.join(METHODS)} (another is UNIMPLEMENTED)")
    c.add_argument("-H", "--header", action="append", default=[], metavar="NAME:VALUE", help="request metadata")
    c.add_argument("--timeout", type=float, default=10)
    args = ap.parse_args(argv)
    if args.command == "call":
        metadata = tuple((h.split(":", 1)[0].strip().lower(), h.split(":", 1)[1].strip()) for h in args.header)
        out = call(args.target, args.authority, args.method, metadata, args.timeout)
        print(json.dumps(out, indent=1))
        return 0 if out["code"] == "OK" else 1
    return serve_forever()


def serve_forever() -> int:
    port = int(os.environ.get("HTTP_PORT") or 3000)
    bind = os.environ.get("PODRUNNER_BIND_ADDRESS") or "0.0.0.0"
    server, bound = serve(f"{bind}:{port}")
    print(f"plaintext server listening at {bind}:{bound}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop(grace=2).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
