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
		inode := socketInode(a)
		if inode == "" {
			return false
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return false
		}
		want := "socket:[" + inode + "]"
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name())); err == nil && l == want {
				return true
			}
		}
		return false
	}
}

// socketInode is the inode of the IPv4 TCP socket whose local address is
// a, from /proc/net/tcp ("" when none).
func socketInode(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	// /proc/net/tcp writes the address as the 32-bit value in host
	// (little-endian) byte order, the port big-endian, both in hex.
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) >= 10 && fields[1] == local {
			return fields[9]
		}
	}
	return ""
}
