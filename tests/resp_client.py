"""A minimal raw RESP2/RESP3 client for exact, typed reply comparison.

redis-py transforms replies (callbacks turn "+OK" into True, maps into dicts,
errors into exceptions); the differential tests need the bytes' meaning
without that layer, so this client parses every reply into a small typed
tree:

    bulk string  -> bytes            integer      -> int
    simple str   -> Status(b"OK")    error        -> Err(b"ERR ...")
    $-1 / _      -> None             *-1          -> NIL_ARRAY
    array        -> list             RESP3 map    -> Map([(k, v), ...])
    RESP3 set    -> RSet([...])      RESP3 double -> Double(b"1.5")
    RESP3 bool   -> Bool(True)       verbatim     -> Verbatim(b"txt", b"...")
    big number   -> BigNum(b"...")   push         -> Push([...])

The wrapper classes compare by type and value, so Status(b"OK") != b"OK".
"""

from __future__ import annotations

import socket
from dataclasses import dataclass


@dataclass
class Status:
    value: bytes


@dataclass
class Err:
    value: bytes

    @property
    def text(self) -> str:
        return self.value.decode("utf-8", "replace")


@dataclass
class Double:
    value: bytes


@dataclass
class Bool:
    value: bool


@dataclass
class BigNum:
    value: bytes


@dataclass
class Verbatim:
    fmt: bytes
    value: bytes


@dataclass
class Map:
    items: list


@dataclass
class RSet:
    items: list


@dataclass
class Push:
    items: list


class _NilArray:
    _inst = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self):
        return "NIL_ARRAY"


NIL_ARRAY = _NilArray()


class ConnectionClosed(Exception):
    pass


def encode_command(*args) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, bytes):
            b = a
        elif isinstance(a, str):
            b = a.encode()
        elif isinstance(a, (int, float)):
            b = repr(a).encode() if isinstance(a, float) else str(a).encode()
        else:
            raise TypeError(f"bad argument type {type(a)}")
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class RespClient:
    def __init__(self, port: int, host: str = "127.0.0.1", protocol: int = 2, timeout: float = 15.0):
        self.port = port
        self.host = host
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.protocol = 2
        if protocol == 3:
            r = self.call("HELLO", "3")
            if isinstance(r, Err):
                raise RuntimeError(f"HELLO 3 failed: {r}")
            self.protocol = 3

    # -- io -------------------------------------------------------------
    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def _fill(self):
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError as e:
            raise ConnectionClosed("connection reset") from e
        if not chunk:
            raise ConnectionClosed("connection closed by server")
        self.buf += chunk

    def _readline(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def _readexact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read_until_close(self, timeout: float = 5.0) -> bytes:
        """Everything the server sends until it closes the connection."""
        self.sock.settimeout(timeout)
        data = self.buf
        self.buf = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                break
            except socket.timeout:
                raise AssertionError(f"server did not close the connection; got {data!r}")
            if not chunk:
                break
            data += chunk
        return data

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True when the server has closed the connection (EOF/reset within timeout)."""
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(1)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
        return chunk == b""

    # -- parsing --------------------------------------------------------
    def read_reply(self):
        line = self._readline()
        if not line:
            raise ValueError("empty reply line")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Status(rest)
        if t == b"-":
            return Err(rest)
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            return self._readexact(n)
        if t == b"*":
            n = int(rest)
            if n < 0:
                return NIL_ARRAY
            return [self.read_reply() for _ in range(n)]
        if t == b"_":
            return None
        if t == b",":
            return Double(rest)
        if t == b"#":
            return Bool(rest == b"t")
        if t == b"(":
            return BigNum(rest)
        if t == b"=":
            data = self._readexact(int(rest))
            return Verbatim(data[:3], data[4:])
        if t == b"!":
            return Err(self._readexact(int(rest)))
        if t == b"%":
            n = int(rest)
            return Map([(self.read_reply(), self.read_reply()) for _ in range(n)])
        if t == b"~":
            return RSet([self.read_reply() for _ in range(int(rest))])
        if t == b">":
            return Push([self.read_reply() for _ in range(int(rest))])
        if t == b"|":
            n = int(rest)
            for _ in range(n):  # attributes: read and drop, then the real reply
                self.read_reply()
                self.read_reply()
            return self.read_reply()
        raise ValueError(f"unknown RESP type byte in {line!r}")

    # -- commands -------------------------------------------------------
    def call(self, *args):
        self.send_raw(encode_command(*args))
        return self.read_reply()

    def pipeline(self, cmds):
        self.send_raw(b"".join(encode_command(*c) for c in cmds))
        return [self.read_reply() for _ in cmds]


def to_py(v):
    """Convert a typed reply into plain Python values (for convenience checks)."""
    if isinstance(v, (Status, Double, BigNum)):
        return v.value
    if isinstance(v, Bool):
        return v.value
    if isinstance(v, Verbatim):
        return v.value
    if isinstance(v, Map):
        return {to_py(k): to_py(x) for k, x in v.items}
    if isinstance(v, (RSet, Push)):
        return [to_py(x) for x in v.items]
    if isinstance(v, list):
        return [to_py(x) for x in v]
    if v is NIL_ARRAY:
        return None
    return v
