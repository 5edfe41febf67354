"""A `_socket` without sockets, so that `socket` (which asyncio imports) imports.

This CPython is built without its socket module (WASI preview 1 has none). The names `socket`
and asyncio read at import time are here; anything that would make a socket raises OSError,
which is what the componentize-py guest's real module gives too (the engine's WASI context
denies every socket). No capability comes with it.
"""

import errno as _errno

AF_UNSPEC = 0
AF_UNIX = 1
AF_INET = 2
AF_INET6 = 10
SOCK_STREAM = 1
SOCK_DGRAM = 2
SOCK_RAW = 3
SOL_SOCKET = 0x7FFFFFFF
SO_REUSEADDR = 2
SO_KEEPALIVE = 9
SO_ERROR = 4
IPPROTO_IP = 0
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_IPV6 = 41
TCP_NODELAY = 1
IPV6_V6ONLY = 26
AI_PASSIVE = 0x1
AI_CANONNAME = 0x2
AI_NUMERICHOST = 0x4
NI_NUMERICHOST = 0x1
NI_NUMERICSERV = 0x2
MSG_PEEK = 0x2
SHUT_RD = 0
SHUT_WR = 1
SHUT_RDWR = 2
SOMAXCONN = 128
has_ipv6 = False

error = OSError


class herror(OSError):
    """An address-related error (never raised here)."""


class gaierror(OSError):
    """An address-lookup error."""


timeout = TimeoutError


def _refuse(*args, **kwargs):
    raise OSError(_errno.ENOTSUP, "sockets are not available in the codecell sandbox")


class socket:
    """Every socket operation fails: there is no network."""

    __slots__ = ()

    def __init__(self, *args, **kwargs):
        _refuse()


getaddrinfo = gethostbyname = gethostbyname_ex = gethostbyaddr = getnameinfo = _refuse
getservbyname = getservbyport = getprotobyname = socketpair = dup = _refuse
inet_aton = inet_ntoa = inet_pton = inet_ntop = _refuse


def gethostname():
    return "localhost"


def getdefaulttimeout():
    return None


def setdefaulttimeout(timeout):
    pass


def ntohs(x):
    return ((x & 0xFF) << 8) | ((x >> 8) & 0xFF)


htons = ntohs


def ntohl(x):
    return int.from_bytes((x & 0xFFFFFFFF).to_bytes(4, "big"), "little")


htonl = ntohl
