package broker

import (
	"net"
	"strconv"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// vipCodes are what this broker answers on Apache's fast ("VIP") port:
// Apache's SlaveSynchronize asks a master for its timer checkpoint and
// metrics there (BrokerOuterAPI: MixAll.brokerVIPChannel), so an Apache
// slave of ours reaches them only on that port. Nothing else is served
// there (an Apache broker serves everything on it; clients use it only
// with sendMessageWithVIPChannel, off by default in 5.x).
var vipCodes = [...]int32{code.GetTimerCheckPoint, code.GetTimerMetrics}

// startVIP listens on the listen port − 2 (Apache's fastListenPort) for
// vipCodes, with the main port's handlers, executors and auth hook. The
// port being taken is logged, not fatal.
func (b *Broker) startVIP(port int) {
	cfg := b.cfg.Get()
	if port <= 2 || b.msg == nil || b.msg.timer == nil || !cfg.VipChannelListenEnable {
		return
	}
	host := cfg.BindAddress
	if host == "" {
		host = "0.0.0.0"
	}
	scfg := remoting.DefaultServerConfig()
	scfg.ListenAddr = net.JoinHostPort(host, strconv.Itoa(port-2))
	scfg.TLS = b.tls.Remoting()
	if cfg.FrameMaxLength > 0 {
		scfg.MaxFrameSize = cfg.FrameMaxLength
	}
	log := b.log.With("component", "remoting-vip")
	s, err := remoting.NewServer(scfg, log)
	if err != nil {
		log.Warn("no VIP port: an Apache slave cannot copy the timer checkpoint and metrics", "err", err)
		return
	}
	for _, c := range vipCodes {
		if h, ex, ok := b.server.Handler(c); ok {
			s.Register(c, h, ex)
		}
	}
	if b.authHook != nil {
		s.AddHook(b.authHook)
	}
	if err := s.Start(); err != nil {
		log.Warn("no VIP port: an Apache slave cannot copy the timer checkpoint and metrics", "addr", scfg.ListenAddr, "err", err)
		return
	}
	b.vip = s
}
