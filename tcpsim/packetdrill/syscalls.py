"""The system calls of the receive-path subset, on simulated sockets.

`Syscalls.prepare(event)` checks the arguments and returns an *attempt*: a function that makes
the call against the host's current state and returns an `Outcome`, or None when the call
would block (the interpreter retries a blocked call after every change of state). The
script's fd numbers are used as the simulated fds, as packetdrill maps script fds onto live
ones.

    socket(..., SOCK_STREAM, IPPROTO_TCP)  a new TcpSocket, the new socket under test
    setsockopt SO_REUSEADDR, SO_RCVBUF,    no-op, `set_rcvbuf`, the TCP_CM_INQ flag,
      TCP_INQ, TCP_WINDOW_CLAMP,           `set_window_clamp`, Nagle
      TCP_NODELAY
    getsockopt SO_RCVBUF, SO_SNDBUF,       the value, compared with `[value]`
      TCP_INQ, TCP_WINDOW_CLAMP, TCP_MAXSEG
    bind, listen, accept                   `listen()`; accept once the handshake is done
    connect                                `connect(now)`; EINPROGRESS when non-blocking
    fcntl F_GETFL / F_SETFL                O_NONBLOCK
    read, recv, recvfrom, recvmsg          `read(now, n)`; EOF, EAGAIN, ENOTCONN as
                                           tcp_recvmsg(); the TCP_CM_INQ cmsg
    ioctl SIOCINQ/FIONREAD, SIOCOUTQ       tcp_ioctl()
    write, send                            `write(now, n)`
    shutdown SHUT_WR, close                `shutdown_write(now)`; `close(now)` (tcp_close())
"""

from __future__ import annotations

import errno as E
from dataclasses import dataclass
from typing import Callable

from tcpsim.core.socket import TcpSocket
from tcpsim.core.state import (
    CLOSE_WAIT, CLOSED, ESTABLISHED, LISTEN, SYN_RECV, SYN_SENT, SYNCHRONIZED,
)

from .ast import Array, Assign, Call, Dots, Expr, Int, Struct, Symbol, SyscallEvent
from .host import Endpoint, Host
from .symbols import SYMBOLS, SymbolError, errno_number, int_value, strerror

S = SYMBOLS

Attempt = Callable[[], "Outcome | None"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a call returned: value, errno (0 for none) and the first failed output check."""

    value: int
    errno: int = 0
    problem: str | None = None


class SyscallError(Exception):
    """The call cannot be made as written. `unsupported` marks calls outside the subset."""

    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


def _unsupported(what: str) -> SyscallError:
    return SyscallError(f"unsupported: {what}", unsupported=True)


def _fail(err: int) -> Outcome:
    return Outcome(-1, err)


class Syscalls:
    """The system-call table over one Host."""

    def __init__(self, host: Host) -> None:
        self.host = host

    # -- entry points --------------------------------------------------------------------------

    def prepare(self, event: SyscallEvent) -> Attempt:
        handler = getattr(self, f"_sys_{event.name}", None)
        if handler is None:
            raise _unsupported(f"system call {event.name}()")
        try:
            return handler(event, event.args)
        except SymbolError as exc:
            raise _unsupported(str(exc)) from None

    @staticmethod
    def check(event: SyscallEvent, out: Outcome) -> str | None:
        """packetdrill's end_syscall(): the result, then the errno, then output checks."""
        if not isinstance(event.result, Int):
            raise _unsupported(f"result expression {event.result!r}")
        expected = event.result.value
        fd_call = event.name in ("socket", "accept")
        mismatch = (out.value < 0) if (fd_call and expected >= 0) else out.value != expected
        if mismatch:
            if fd_call and expected >= 0:
                return (f"Expected non-negative result but got {out.value} with errno "
                        f"{out.errno} ({strerror(out.errno)})")
            return (f"Expected result {expected} but got {out.value} with errno {out.errno} "
                    f"({strerror(out.errno)})")
        if event.errno is not None:
            try:
                want = errno_number(event.errno)
            except SymbolError as exc:
                raise _unsupported(str(exc)) from None
            if want != out.errno:
                return (f"Expected errno {want} ({strerror(want)}) but got {out.errno} "
                        f"({strerror(out.errno)})")
        return out.problem

    # -- helpers -------------------------------------------------------------------------------

    def _ep(self, args: tuple[Expr, ...], index: int = 0) -> Endpoint:
        fd = int_value(args[index])
        ep = self.host.fds.get(fd)
        if ep is None:
            raise SyscallError(f"unable to find fd with script fd {fd}")
        return ep

    @staticmethod
    def _nargs(args: tuple[Expr, ...], *counts: int) -> None:
        if len(args) not in counts:
            want = " or ".join(str(c) for c in counts)
            raise SyscallError(f"Expected {want} args but got {len(args)}")

    def _new_fd(self, event: SyscallEvent, ep: Endpoint) -> int:
        fd = event.result.value if isinstance(event.result, Int) else -1
        if fd < 0:
            fd = 3
            while fd in self.host.fds:
                fd += 1
        if fd in self.host.fds:
            raise SyscallError(f"duplicate fd {fd} in script")
        self.host.fds[fd] = ep
        return fd

    @property
    def _now(self) -> int:
        return self.host.now_ns

    # -- sockets -------------------------------------------------------------------------------

    def _sys_socket(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 3)
        domains = (S["AF_INET"], S["AF_INET6"])
        if not isinstance(args[0], Dots) and int_value(args[0]) not in domains:
            raise _unsupported("socket domain other than AF_INET/AF_INET6")
        stream = int_value(args[1]) == S["SOCK_STREAM"]
        if not stream or int_value(args[2]) not in (S["IPPROTO_TCP"], 0):
            raise _unsupported("socket other than SOCK_STREAM/IPPROTO_TCP")

        def attempt() -> Outcome:
            sk = self.host.new_socket()
            return Outcome(self._new_fd(event, Endpoint(sk)))
        return attempt

    def _sys_bind(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 3)
        self._ep(args)
        return lambda: Outcome(0)

    def _sys_listen(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 2)
        ep = self._ep(args)

        def attempt() -> Outcome:
            if ep.sk.conn.state not in (CLOSED, LISTEN):
                return _fail(E.EINVAL)
            ep.sk.listen()
            ep.sk.accepted = False      # no struct socket until accept() (6.18's OFO growth)
            ep.listener = True
            return Outcome(0)
        return attempt

    def _sys_accept(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 3)
        ep = self._ep(args)
        if not ep.listener:
            raise SyscallError("accept() on a socket that is not listening")

        def attempt() -> Outcome | None:
            sk = ep.sk
            ready = sk.conn.state not in (LISTEN, SYN_RECV, CLOSED) and not sk.accepted
            if ready:
                sk.accepted = True
                return Outcome(self._new_fd(event, Endpoint(sk)))
            return _fail(E.EAGAIN) if ep.nonblocking else None
        return attempt

    def _sys_connect(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 3)
        ep = self._ep(args)
        started = [False]

        def attempt() -> Outcome | None:
            sk = ep.sk
            if not started[0]:
                if sk.conn.state != CLOSED:
                    return _fail(E.EISCONN if sk.conn.state in SYNCHRONIZED else E.EALREADY)
                started[0] = True
                sk.connect(self._now)
                self.host.collect()
                if ep.nonblocking:
                    return _fail(E.EINPROGRESS)
            if sk.conn.state in SYNCHRONIZED:
                return Outcome(0)
            if sk.error:
                return _fail(getattr(E, sk.error, E.ECONNREFUSED))
            return None
        return attempt

    # -- options -------------------------------------------------------------------------------

    def _sys_fcntl(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 2, 3)
        ep = self._ep(args)
        cmd = int_value(args[1])
        if cmd == S["F_GETFL"] and len(args) == 2:
            return lambda: Outcome(S["O_RDWR"] | (S["O_NONBLOCK"] if ep.nonblocking else 0))
        if cmd == S["F_SETFL"] and len(args) == 3:
            flags = int_value(args[2])

            def attempt() -> Outcome:
                ep.nonblocking = bool(flags & S["O_NONBLOCK"])
                return Outcome(0)
            return attempt
        raise _unsupported("fcntl command other than F_GETFL/F_SETFL")

    def _sys_setsockopt(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 5)
        ep = self._ep(args)
        level, name = int_value(args[1]), int_value(args[2])
        val = int_value(args[3])
        sol_tcp = level in (S["SOL_TCP"], S["IPPROTO_TCP"])

        def attempt() -> Outcome:
            sk = ep.sk
            if level == S["SOL_SOCKET"] and name == S["SO_REUSEADDR"]:
                pass
            elif level == S["SOL_SOCKET"] and name == S["SO_RCVBUF"]:
                sk.set_rcvbuf(val)
            elif sol_tcp and name == S["TCP_INQ"]:
                ep.inq = bool(val)
            elif sol_tcp and name == S["TCP_NODELAY"]:
                sk.snd.nodelay = bool(val)
            elif sol_tcp and name == S["TCP_WINDOW_CLAMP"]:
                if val == 0 and sk.conn.state != CLOSED:
                    return _fail(E.EINVAL)
                sk.set_window_clamp(val)
            else:
                raise _unsupported(f"setsockopt level {level} option {name}")
            self.host.collect()
            return Outcome(0)
        return attempt

    def _sys_getsockopt(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 5)
        ep = self._ep(args)
        level, name = int_value(args[1]), int_value(args[2])
        expected = None if isinstance(args[3], Dots) else int_value(args[3])
        sol_tcp = level in (S["SOL_TCP"], S["IPPROTO_TCP"])
        readers: dict[tuple[bool, int], Callable[[TcpSocket], int]] = {
            (False, S["SO_RCVBUF"]): lambda sk: sk.mem.sk_rcvbuf,
            (False, S["SO_SNDBUF"]): lambda sk: sk.snd.sk_sndbuf,
            (True, S["TCP_INQ"]): lambda sk: int(ep.inq),
            (True, S["TCP_WINDOW_CLAMP"]): lambda sk: sk.rcv.window_clamp,
            (True, S["TCP_MAXSEG"]): lambda sk: sk.conn.mss_cache,
            (True, S["TCP_NODELAY"]): lambda sk: int(sk.snd.nodelay),
        }
        if not (sol_tcp or level == S["SOL_SOCKET"]) or (sol_tcp, name) not in readers:
            raise _unsupported(f"getsockopt level {level} option {name}")
        read = readers[(sol_tcp, name)]

        def attempt() -> Outcome:
            actual = read(ep.sk)
            problem = None
            if expected is not None and actual != expected:
                problem = f"Bad getsockopt optval: expected: {expected} actual: {actual}"
            return Outcome(0, 0, problem)
        return attempt

    # -- receiving -----------------------------------------------------------------------------

    def _receive(self, ep: Endpoint, n: int, dontwait: bool) -> Outcome | None:
        """tcp_recvmsg() for `n` bytes: data, EOF, an error, EAGAIN, or None (blocks)."""
        sk = ep.sk
        if ep.listener or sk.conn.state == LISTEN:
            return _fail(E.ENOTCONN)
        if sk.mem.receive_queue:
            got = sk.read(self._now, n)
            self.host.collect()
            if got > 0 or sk.rcv.rcv_shutdown:
                return Outcome(got)
        if sk.error:
            return _fail(getattr(E, sk.error, E.ECONNRESET))
        if sk.rcv.rcv_shutdown:
            return Outcome(0)
        if sk.conn.state == CLOSED:
            return _fail(E.ENOTCONN)
        if ep.nonblocking or dontwait:
            return _fail(E.EAGAIN)
        return None

    def _sys_read(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 3)
        ep = self._ep(args)
        n = int_value(args[2])
        return lambda: self._receive(ep, n, False)

    def _sys_recv(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 4)
        ep = self._ep(args)
        n, flags = int_value(args[2]), int_value(args[3])
        if flags & ~S["MSG_DONTWAIT"]:
            raise _unsupported(f"recv flags {flags:#x}")
        return lambda: self._receive(ep, n, bool(flags & S["MSG_DONTWAIT"]))

    def _sys_recvfrom(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 6)
        return self._sys_recv(event, args[:4])

    def _sys_recvmsg(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 3)
        ep = self._ep(args)
        flags = int_value(args[2])
        if flags & ~S["MSG_DONTWAIT"]:
            raise _unsupported(f"recvmsg flags {flags:#x}")
        n, msg_flags, cmsgs = _parse_msghdr(args[1])

        def attempt() -> Outcome | None:
            out = self._receive(ep, n, bool(flags & S["MSG_DONTWAIT"]))
            if out is None or out.value < 0:
                return out
            delivered = [(S["SOL_TCP"], S["TCP_CM_INQ"], _inq_hint(ep.sk))] if ep.inq else []
            problem = _compare_cmsgs(cmsgs, delivered)
            if problem is None and msg_flags is not None and msg_flags != 0:
                problem = f"Expected msg_flags {msg_flags:#x} but got 0x0"
            return Outcome(out.value, 0, problem)
        return attempt

    def _sys_ioctl(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 3)
        ep = self._ep(args)
        cmd = int_value(args[1])
        expected = None if isinstance(args[2], Dots) else int_value(args[2])
        if cmd not in (S["SIOCINQ"], S["SIOCOUTQ"]):
            raise _unsupported(f"ioctl {cmd:#x}")

        def attempt() -> Outcome:
            sk = ep.sk
            if ep.listener or sk.conn.state == LISTEN:
                return _fail(E.EINVAL)
            if cmd == S["SIOCINQ"]:
                actual = _tcp_inq(sk)
            else:
                handshake = sk.conn.state in (SYN_SENT, SYN_RECV)
                actual = 0 if handshake else sk.snd.write_seq - sk.snd.snd_una
            problem = None
            if expected is not None and actual != expected:
                problem = f"Bad ioctl optval: expected: {expected} actual: {actual}"
            return Outcome(0, 0, problem)
        return attempt

    # -- sending and closing -------------------------------------------------------------------

    def _sys_write(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 3)
        return self._sender(self._ep(args), int_value(args[2]), False)

    def _sys_send(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 4)
        flags = int_value(args[3])
        if flags & ~S["MSG_DONTWAIT"]:
            raise _unsupported(f"send flags {flags:#x}")
        return self._sender(self._ep(args), int_value(args[2]), bool(flags & S["MSG_DONTWAIT"]))

    def _sender(self, ep: Endpoint, n: int, dontwait: bool) -> Attempt:
        done = [0]

        def attempt() -> Outcome | None:
            sk = ep.sk
            if sk.error:
                return _fail(getattr(E, sk.error, E.EPIPE))
            if ep.listener or sk.conn.state not in (ESTABLISHED, CLOSE_WAIT, SYN_SENT, SYN_RECV):
                return _fail(E.EPIPE if sk.conn.state != LISTEN else E.ENOTCONN)
            if sk.conn.state in (ESTABLISHED, CLOSE_WAIT) and done[0] < n:
                done[0] += sk.write(self._now, n - done[0])
                self.host.collect()
            if done[0] == n or (done[0] and (ep.nonblocking or dontwait)):
                return Outcome(done[0])
            return _fail(E.EAGAIN) if (ep.nonblocking or dontwait) else None
        return attempt

    def _sys_shutdown(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 2)
        ep = self._ep(args)
        how = int_value(args[1])
        if how != S["SHUT_WR"]:
            raise _unsupported("shutdown other than SHUT_WR")

        def attempt() -> Outcome:
            sk = ep.sk
            if ep.listener or sk.conn.state in (LISTEN, CLOSED, SYN_SENT):
                return _fail(E.ENOTCONN)
            sk.shutdown_write(self._now)
            self.host.collect()
            return Outcome(0)
        return attempt

    def _sys_close(self, event: SyscallEvent, args: tuple[Expr, ...]) -> Attempt:
        self._nargs(args, 1)
        fd = int_value(args[0])
        ep = self._ep(args)

        def attempt() -> Outcome:
            del self.host.fds[fd]
            if not ep.listener:
                self._tcp_close(ep.sk)
            elif ep.sk.conn.state == LISTEN or not ep.sk.accepted:
                if ep.sk.conn.state not in (LISTEN, CLOSED):
                    self.host.note("close() of a listener with a connection not yet accepted: "
                                   "the connection is left alone (the kernel resets it)")
            self.host.collect()
            return Outcome(0)
        return attempt

    def _tcp_close(self, sk: TcpSocket) -> None:
        """tcp_close() (TcpSocket.close): a FIN after the data, a RST when data was left
        unread, nothing before the connection exists."""
        sk.close(self._now)


# --------------------------------------------------------------------------- helpers


def _tcp_inq(sk: TcpSocket) -> int:
    """tcp_inq(): bytes not yet read, not counting a received FIN."""
    if sk.conn.state in (SYN_SENT, SYN_RECV):
        return 0
    answ = sk.rcv.rcv_nxt - sk.rcv.copied_seq
    if answ and sk.rcv.rcv_shutdown:
        answ -= 1
    return answ


def _inq_hint(sk: TcpSocket) -> int:
    """tcp_inq_hint(): rcv_nxt - copied_seq, and 1 once a FIN left nothing to read."""
    inq = sk.rcv.rcv_nxt - sk.rcv.copied_seq
    if inq == 0 and sk.rcv.rcv_shutdown:
        inq = 1
    return inq


def _assigns(expr: Expr) -> dict[str, Expr]:
    if not isinstance(expr, Struct):
        raise _unsupported("msghdr that is not a {...} struct")
    out: dict[str, Expr] = {}
    for item in expr.items:
        if not isinstance(item, Assign):
            raise _unsupported("msghdr field without a name")
        target = item.target
        key = target.name if isinstance(target, (Symbol, Call)) else str(target)
        out[key] = item.value
    return out


def _parse_msghdr(expr: Expr) -> tuple[int, int | None, list[tuple[int, int, int]] | None]:
    """(bytes asked for, expected msg_flags, expected cmsgs) of a recvmsg msghdr."""
    fields = _assigns(expr)
    unknown = set(fields) - {"msg_name", "msg_iov", "msg_flags", "msg_control"}
    if unknown:
        raise _unsupported(f"msghdr field {sorted(unknown)[0]}")
    iov = fields.get("msg_iov")
    if not isinstance(iov, Array):
        raise _unsupported("msghdr without msg_iov(N)=[{..., len}]")
    n = 0
    for vec in iov.items:
        if not (isinstance(vec, Struct) and len(vec.items) == 2):
            raise _unsupported("iovec other than {..., len}")
        n += int_value(vec.items[1])
    flags = fields.get("msg_flags")
    msg_flags = None if flags is None or isinstance(flags, Dots) else int_value(flags)
    control = fields.get("msg_control")
    if control is None or isinstance(control, Dots):
        return n, msg_flags, None
    if not isinstance(control, Array):
        raise _unsupported("msg_control that is not a [...] list")
    cmsgs = []
    for c in control.items:
        f = _assigns(c)
        try:
            cmsgs.append((int_value(f["cmsg_level"]), int_value(f["cmsg_type"]),
                          int_value(f["cmsg_data"])))
        except KeyError as exc:
            raise _unsupported(f"cmsg without {exc.args[0]}") from None
    return n, msg_flags, cmsgs


def _compare_cmsgs(expected: list[tuple[int, int, int]] | None,
                   actual: list[tuple[int, int, int]]) -> str | None:
    if expected is None:
        return None
    if len(expected) != len(actual):
        return f"Expected {len(expected)} control message(s) but got {len(actual)}"
    for (lvl, typ, data), (alvl, atyp, adata) in zip(expected, actual):
        if (lvl, typ) != (alvl, atyp):
            return f"Bad cmsg: expected level {lvl} type {typ} vs actual level {alvl} type {atyp}"
        if data != adata:
            return f"Bad cmsg_data: expected: {data} actual: {adata}"
    return None
