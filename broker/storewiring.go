package broker

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/commitlog"
)

// zeroAheadBytes is how far ahead of the write position the CommitLog is
// kept written with zeros when zero-ahead is on.
const zeroAheadBytes = 64 << 20

// storeConfig maps Apache's MessageStoreConfig keys onto the store.
func storeConfig(cfg *config.Config, log *slog.Logger) (store.Config, error) {
	sc := store.DefaultConfig(cfg.StorePathRootDir)
	cl := &sc.CommitLog
	cl.Dir = cfg.CommitLogDir()
	cl.FileSize = int64(cfg.MappedFileSizeCommitLog)
	cl.PrepareNext = true
	ft, err := commitlog.ParseFlushDiskType(cfg.FlushDiskType)
	if err != nil {
		return sc, err
	}
	cl.FlushDiskType = ft
	if cfg.WarmMapedFileEnable || ft == commitlog.SyncFlush {
		// Blocks written ahead make each SYNC_FLUSH fdatasync cheaper
		// (commitlog/zeroahead.go); Apache's warmMapedFileEnable writes
		// zeros over a whole new file for the same reason.
		cl.ZeroAhead = zeroAheadBytes
	}
	if cfg.FlushIntervalCommitLog > 0 {
		cl.FlushInterval = cfg.FlushIntervalCommitLog
	}
	cl.FlushLeastPages = cfg.FlushCommitLogLeastPages
	if cfg.FlushCommitLogThoroughInterval > 0 {
		cl.FlushThoroughInterval = cfg.FlushCommitLogThoroughInterval
	}
	if cfg.SyncFlushTimeout > 0 {
		cl.SyncFlushTimeout = cfg.SyncFlushTimeout
	}
	cl.CheckCRCOnRecover = cfg.CheckCRCOnRecover
	cl.FileReservedTime = hours(cfg.FileReservedTime)
	cl.DeleteWhen = cfg.DeleteWhen
	cl.DiskMaxUsedSpaceRatio = cfg.DiskMaxUsedSpaceRatio
	cl.DiskSpaceCleanForciblyRatio = float64(cfg.DiskSpaceCleanForciblyRatio) / 100
	cl.DiskSpaceWarningLevelRatio = float64(cfg.DiskSpaceWarningLevelRatio) / 100
	cl.CleanFileForcibly = cfg.CleanFileForciblyEnable
	cl.NoReadAhead = !cfg.DataReadAheadEnable
	if cfg.CleanResourceInterval > 0 {
		cl.CleanResourceInterval = cfg.CleanResourceInterval
	}
	sc.MaxMessageSize = cfg.MaxMessageSize
	sc.MessageIndexEnable = cfg.MessageIndexEnable
	sc.EnableLmq = cfg.EnableLmq
	sc.EnableMultiDispatch = cfg.EnableMultiDispatch
	sc.EnableLmqQuota = cfg.EnableLmqQuota
	sc.MaxLmqConsumeQueueNum = cfg.MaxLmqConsumeQueueNum
	sc.LmqDeleteWork, sc.LmqDeleteRest = cfg.LiteSweepWorkMs, cfg.LiteSweepRestMs
	if cfg.FlushConsumerOffsetInterval > 0 {
		sc.OffsetFlushInterval = cfg.FlushConsumerOffsetInterval
	}
	host, err := storeHost(cfg.BrokerIP1, cfg.ListenPort)
	if err != nil {
		return sc, err
	}
	sc.StoreHost = host
	sc.Logger = log
	return sc, nil
}

func hours(h int) time.Duration { return time.Duration(h) * time.Hour }

// storeHost resolves brokerIP1 (an IP or a host name) for the records'
// store host field.
func storeHost(ip string, port int) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(ip); err == nil {
		return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
	}
	addrs, err := net.LookupHost(ip)
	if err != nil || len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("broker: brokerIP1 %q does not resolve: %v", ip, err)
	}
	a, err := netip.ParseAddr(addrs[0])
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("broker: brokerIP1 %q: %w", ip, err)
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}

// storeStats adapts the store to the admin statistics interfaces.
type storeStats struct{ s *store.Store }

func (a storeStats) MinOffsetInQueue(topic string, qid int) int64 {
	return a.s.MinOffset(topic, int32(qid))
}

func (a storeStats) MaxOffsetInQueue(topic string, qid int) int64 {
	return a.s.MaxOffset(topic, int32(qid))
}

func (a storeStats) MessageStoreTimestamp(topic string, qid int, off int64) int64 {
	if t := a.s.MessageStoreTime(topic, int32(qid), off); t > 0 {
		return t
	}
	return 0
}

func (a storeStats) RuntimeInfo() map[string]string {
	st := a.s.Stats()
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	m := map[string]string{
		"commitLogMinOffset":  strconv.FormatInt(st.CommitLogMinOffset, 10),
		"commitLogMaxOffset":  strconv.FormatInt(st.CommitLogMaxOffset, 10),
		"dispatchBehindBytes": strconv.FormatInt(st.DispatchBehind, 10),
		"putTps":              f(st.PutTps) + " " + f(st.PutTps) + " " + f(st.PutTps),
		"getTransferredTps":   f(st.GetTransferredTps) + " " + f(st.GetTransferredTps) + " " + f(st.GetTransferredTps),
		"msgPutTotalTodayNow": strconv.FormatInt(st.PutMessageCount, 10),
		"msgGetTotalTodayNow": strconv.FormatInt(st.GetMessageCount, 10),
	}
	if st.EarliestMessageTime > 0 {
		m["earliestMessageTimeStamp"] = strconv.FormatInt(st.EarliestMessageTime, 10)
	}
	return m
}
