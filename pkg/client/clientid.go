package client

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"
)

// localIP picks the address other hosts know this client by, for the client
// id and UNIQ_KEY: a private IPv4 first (what Java's getLocalAddress
// prefers), then any non-loopback IPv4, then IPv6, then loopback.
func localIP() netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	var v4, v6 netip.Addr
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := pfx.Addr().Unmap()
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
			continue
		}
		switch {
		case ip.Is4() && ip.IsPrivate():
			return ip
		case ip.Is4() && !v4.IsValid():
			v4 = ip
		case ip.Is6() && !v6.IsValid():
			v6 = ip
		}
	}
	switch {
	case v4.IsValid():
		return v4
	case v6.IsValid():
		return v6
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// defaultInstanceName is Java's "<pid>#<nanoTime>": unique per client so two
// clients of one process never share a client id (brokers key channels by
// it).
func defaultInstanceName() string {
	return strconv.Itoa(os.Getpid()) + "#" + strconv.FormatInt(time.Now().UnixNano(), 10)
}

// buildClientID is Java's clientIP@instanceName.
func buildClientID(ip netip.Addr, instance string) string {
	return ip.String() + "@" + instance
}
