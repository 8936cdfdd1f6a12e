"""The client address sign-ins are throttled by: the connection's peer, loopback included, or the address a configured
trusted proxy forwarded (X-Forwarded-For), never one a client wrote itself.

Trusted proxies are set with GAUNTLET_TRUSTED_PROXIES (environment or .streamlit/secrets.toml): comma-separated
addresses or networks, e.g. "127.0.0.1, 10.0.0.0/8". Unset, no forwarded address is honoured.
"""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

from core.config import get_secret

TRUSTED_PROXIES_SETTING = "GAUNTLET_TRUSTED_PROXIES"

Network = IPv4Network | IPv6Network


def parse_trusted_proxies(raw: str | None) -> tuple[Network, ...]:
    """The networks of a comma-separated list of addresses/CIDRs; ValueError naming an entry that is neither."""
    networks = []
    for entry in (e.strip() for e in (raw or "").split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{TRUSTED_PROXIES_SETTING}: {entry!r} is not an address or network") from None
    return tuple(networks)


def trusted_proxies() -> tuple[Network, ...]:
    """The configured trusted proxies (GAUNTLET_TRUSTED_PROXIES); none when unset."""
    return parse_trusted_proxies(get_secret(TRUSTED_PROXIES_SETTING))


def _ip(text: str) -> IPv4Address | IPv6Address | None:
    """An address as a proxy writes it (bare, v4 with a port, or [v6] with a port); None when it is not one."""
    text = text.strip()
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _trusted(address: IPv4Address | IPv6Address, trusted: tuple[Network, ...]) -> bool:
    return any(address.version == net.version and address in net for net in trusted)


def client_address(peer: str | None, forwarded_for: str | None, trusted: tuple[Network, ...]) -> str | None:
    """The address to throttle: `peer` (the TCP peer, loopback too), or when the peer is a trusted proxy, the
    right-most X-Forwarded-For entry that is not itself a trusted proxy (entries further left are the client's own
    claims); the peer when there is no such usable entry. None only when the peer is unknown."""
    peer_ip = _ip(peer or "")
    if peer_ip is None:
        return peer or None
    if not _trusted(peer_ip, trusted):
        return str(peer_ip)
    return forwarded_client(forwarded_for, trusted) or str(peer_ip)


def forwarded_client(forwarded_for: str | None, trusted: tuple[Network, ...]) -> str | None:
    """The right-most X-Forwarded-For entry that is not itself a trusted proxy (the client a trusted proxy saw);
    None when there is no such usable entry."""
    for entry in reversed((forwarded_for or "").split(",")):
        hop = _ip(entry)
        if hop is None:
            break
        if not _trusted(hop, trusted):
            return str(hop)
    return None


def via_trusted_proxy(client: str | None, forwarded_for: str | None, trusted: tuple[Network, ...]) -> bool:
    """True when a request reached the app through a trusted proxy, judged from the client address the web server
    reports after it applied X-Forwarded-For for trusted peers only (ui.serve sets FORWARDED_ALLOW_IPS to `trusted`):
    that address is itself a trusted proxy, or it is the hop a trusted proxy forwarded."""
    client_ip = _ip(client or "")
    if client_ip is None or not trusted:
        return False
    return _trusted(client_ip, trusted) or forwarded_client(forwarded_for, trusted) == str(client_ip)
