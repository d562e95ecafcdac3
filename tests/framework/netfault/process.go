package netfault

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// FromProcess matches the connections a process opened (Linux: its socket
// of the connection's client address is looked up in /proc/net/tcp and
// among the process's descriptors). A partition between one process and a
// server others reach at the same address cuts only that process's
// connections: SetModeFor(FromProcess(pid), Blackhole). Connections from
// any other process, or where /proc cannot tell, do not match.
func FromProcess(pid int) func(Conn) bool {
	return func(c Conn) bool {
		a, ok := c.Client.(*net.TCPAddr)
		if !ok {
			return false
		}
		inodes := socketInodes(a)
		if len(inodes) == 0 {
			return false
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return false
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] {
				return true
			}
		}
		return false
	}
}

// socketInodes are the inodes of the IPv4 TCP sockets whose local address
// is a, from /proc/net/tcp. More than one line may have it: a closed
// connection of the same port lingers in TIME_WAIT with inode 0, so every
// line counts and inode 0 is skipped.
func socketInodes(a *net.TCPAddr) map[string]bool {
	ip := a.IP.To4()
	if ip == nil {
		return nil
	}
	// /proc/net/tcp writes the address as the 32-bit value in host
	// (little-endian) byte order, the port big-endian, both in hex.
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return nil
	}
	defer f.Close()
	inodes := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) >= 10 && fields[1] == local && fields[9] != "0" {
			inodes[fields[9]] = true
		}
	}
	return inodes
}
