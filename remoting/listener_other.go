//go:build !linux

package remoting

import (
	"net"

	"github.com/cloudwego/netpoll"
)

// newFDListener: elsewhere netpoll's own conversion (see listener.go for
// why Linux does not use it).
func newFDListener(ln net.Listener) (netpoll.Listener, error) {
	return netpoll.ConvertListener(ln)
}
