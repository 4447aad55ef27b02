"""A stand-in for the ``coredns/coredns`` image of the upstream suite's base manifests.

The suite deploys CoreDNS for its UDPRoute test (not part of the HTTP profiles) and waits for
every pod of its namespaces to be Ready, so the pod must run. This reads the same Corefile
(``-conf FILE``) and answers DNS over UDP and TCP on the server blocks' port: names in a zone
whose block has the ``whoami`` plugin get CoreDNS's whoami answer (the client's address as an A
or AAAA record and its port as an SRV record ``_<transport>.<name>``, both in the additional
section); every other query gets SERVFAIL, because the ``forward`` upstreams of that Corefile
are public resolvers that the test network cannot (and must not) reach.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import re
import struct
import sys

SERVFAIL, NOERROR, FORMERR = 2, 0, 1


def parse_corefile(text: str) -> tuple[int, list[str]]:
    """(port, zones served by whoami) from a Corefile's server blocks."""
    port = 53
    whoami: list[str] = []
    text = re.sub(r"#.*", "", text)
    for m in re.finditer(r"([^\s{}]+(?:\s+[^\s{}]+)*)\s*\{([^{}]*)\}", text):
        plugins = [line.split()[0] for line in m.group(2).splitlines() if line.split()]
        for key in m.group(1).split():
            zone, _, p = key.rpartition(":") if ":" in key else (key, "", "")
            if p.isdigit():
                port = int(p)
            zone = zone.lower().rstrip(".") + "."
            if "whoami" in plugins:
                whoami.append("." if zone == ".." else zone)
    return port, whoami


def _name(data: bytes, off: int) -> tuple[str, int]:
    labels = []
    while True:
        n = data[off]
        if n & 0xC0:
            raise ValueError("compressed names are not expected in a question")
        off += 1
        if n == 0:
            break
        labels.append(data[off:off + n].decode("ascii", "replace"))
        off += n
    return ".".join(labels).lower() + ".", off


def _encode(name: str) -> bytes:
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\x00"


def in_zone(name: str, zones: list[str]) -> bool:
    return any(z == "." or name == z or name.endswith("." + z) for z in zones)


def answer(query: bytes, zones: list[str], client: tuple[str, int], transport: str) -> bytes:
    if len(query) < 12:
        return b""
    qid, flags, qd = struct.unpack("!HHH", query[:6])
    rd = flags & 0x0100
    opcode = flags & 0x7800
    try:
        if qd != 1:
            raise ValueError("one question expected")
        qname, off = _name(query, 12)
        question = query[12:off + 4]
    except (ValueError, IndexError):
        return struct.pack("!HHHHHH", qid, 0x8000 | opcode | rd | FORMERR, 0, 0, 0, 0)
    if not in_zone(qname, zones):
        return struct.pack("!HHHHHH", qid, 0x8000 | opcode | rd | 0x0080 | SERVFAIL, 1, 0, 0, 0) + question
    ip = ipaddress.ip_address(client[0])
    rtype, rdata = (1, ip.packed) if ip.version == 4 else (28, ip.packed)
    addr_rr = _encode(qname) + struct.pack("!HHIH", rtype, 1, 0, len(rdata)) + rdata
    target = _encode(qname)
    srv = struct.pack("!HHH", 0, 0, client[1]) + target
    srv_rr = _encode(f"_{transport}.{qname}") + struct.pack("!HHIH", 33, 1, 0, len(srv)) + srv
    header = struct.pack("!HHHHHH", qid, 0x8000 | opcode | 0x0400 | rd | NOERROR, 1, 0, 0, 2)
    return header + question + addr_rr + srv_rr


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, zones: list[str]) -> None:
        self.zones = zones
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        out = answer(data, self.zones, addr, "udp")
        if out and self.transport:
            self.transport.sendto(out, addr)


async def serve(port: int, zones: list[str]) -> None:
    loop = asyncio.get_running_loop()

    async def tcp(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            while True:
                size = struct.unpack("!H", await reader.readexactly(2))[0]
                out = answer(await reader.readexactly(size), zones, peer[:2], "tcp")
                writer.write(struct.pack("!H", len(out)) + out)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    await loop.create_datagram_endpoint(lambda: _Udp(zones), local_addr=("0.0.0.0", port))
    server = await asyncio.start_server(tcp, "0.0.0.0", port)
    print(f"dns stand-in: listening on :{port} (udp, tcp); whoami zones {zones}; everything else SERVFAIL",
          flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="coredns")
    p.add_argument("-conf", default="Corefile")
    args, _ = p.parse_known_args(argv)
    with open(args.conf, encoding="utf-8") as fh:
        port, zones = parse_corefile(fh.read())
    asyncio.run(serve(port, zones))
    return 0


if __name__ == "__main__":
    sys.exit(main())
